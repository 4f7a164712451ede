#!/usr/bin/env bash
# The tool against hostile command lines and files. Every case runs under a time limit (a hang fails)
# and checks the exit code and the message; every refusal also checks that nothing changed anywhere
# under the scratch folder (the sha256 of every file and the list of every entry before and after), so
# an input is never touched and a refused or failed run leaves nothing behind.
#   check_hostile.sh QMM MAKE_CHECKPOINT HOSTILE_FILES WORK
set -u
QMM=$1 MAKE=$2 HOSTILE=$3 WORK=$4
LIMIT=60 # seconds for one command: far above any case here, so only a hang reaches it

rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
"$MAKE" ck >/dev/null || { echo "make_checkpoint failed"; exit 1; }
cases=0 failed=0
out=""

fail() {
  failed=$((failed + 1))
  echo "FAIL: $case: $*"
  printf '%s\n' "$out" | sed 's/^/    | /' | head -n 20
}

# Everything under the scratch folder: each entry with its type and link target, each regular file's
# hash (FIFOs, sockets and devices are listed, never read).
snapshot() {
  find . -printf '%y %p -> %l\n' | LC_ALL=C sort
  find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
}

# run RC REGEX CMD...: runs CMD under the time limit; checks its exit code and that its output
# (stdout and stderr) matches the extended regular expression REGEX.
run() {
  local want=$1 regex=$2
  shift 2
  cases=$((cases + 1))
  out=$(timeout "$LIMIT" "$@" 2>&1 </dev/null)
  local rc=$?
  if [ "$rc" = 124 ]; then fail "hung (killed after $LIMIT s): $*"; return 1; fi
  if [ "$rc" != "$want" ]; then fail "exit $rc, expected $want: $*"; return 1; fi
  if ! printf '%s\n' "$out" | grep -Eq -- "$regex"; then fail "output does not match '$regex': $*"; return 1; fi
  return 0
}

# refused RC REGEX CMD...: run, and nothing under the scratch folder may change.
refused() {
  local before after
  before=$(snapshot)
  run "$@" || return 1
  after=$(snapshot)
  if [ "$before" != "$after" ]; then
    fail "the run changed files: $(diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | head -n 8 | tr '\n' ' ')"
    return 1
  fi
}

unsafe='an output would touch an input'

# ---- 1. an output never touches the input -------------------------------------------------------
mkdir -p o
ln -s sharded ck/alias                  # another name of the input folder
ln -s ck ck_link                        # another name of the single file's folder
ln -s ../ck/single.safetensors o/sym.safetensors
ln ck/single.safetensors o/hard.safetensors
ln -s ck/sharded/sub link_into_input

case="output folder = input folder, --force";   refused 1 "$unsafe.*'ck/sharded'.*'ck/sharded'" "$QMM" quantize ck/sharded ck/sharded --format nvfp4 --force
case="output folder = input folder, by index";  refused 1 "$unsafe" "$QMM" quantize ck/sharded/model.safetensors.index.json ck/sharded --format nvfp4 --force
case="output folder inside the input";          refused 1 "$unsafe.*'ck/sharded/q'.*inside" "$QMM" quantize ck/sharded ck/sharded/q --format nvfp4
case="output = an existing folder of the input"; refused 1 "$unsafe" "$QMM" quantize ck/sharded ck/sharded/sub --format nvfp4 --force
case="output folder contains the input";        refused 1 "$unsafe.*'ck'.*contains.*'ck/sharded'" "$QMM" quantize ck/sharded ck --format nvfp4 --force
case="output = the input through a symlink";    refused 1 "$unsafe" "$QMM" quantize ck/sharded ck/alias --format nvfp4 --force
case="input through a symlink, output by ..";   refused 1 "$unsafe" "$QMM" quantize ck/alias ck/sharded/sub/.. --format nvfp4 --force
case="output = a symlink into the input";       refused 1 "$unsafe" "$QMM" quantize ck/sharded link_into_input --format nvfp4 --force
case="single file beside its input, --force";   refused 1 "$unsafe.*'ck/q.safetensors'.*'ck/single.safetensors'" "$QMM" quantize ck/single.safetensors ck/q.safetensors --format nvfp4 --force
case="single file onto itself";                 refused 1 "$unsafe" "$QMM" quantize ck/single.safetensors ck/single.safetensors --format fp8 --force
case="single file onto itself through .. ";     refused 1 "$unsafe" "$QMM" quantize ck/single.safetensors o/../ck/single.safetensors --format fp8 --force
case="single file, its folder by a symlink";    refused 1 "$unsafe" "$QMM" quantize ck/single.safetensors ck_link/q.safetensors --format nvfp4 --force
case="single file onto a symlink to itself";    refused 1 "$unsafe.*'o/sym.safetensors'.*'ck/single.safetensors'" "$QMM" quantize ck/single.safetensors o/sym.safetensors --format nvfp4 --force
case="single file onto a hard link to itself";  refused 1 "$unsafe.*'o/hard.safetensors'.*under another name" "$QMM" quantize ck/single.safetensors o/hard.safetensors --format nvfp4 --force
case="single file output named config.json";    refused 1 "$unsafe.*config.json" "$QMM" quantize ck/single.safetensors o/config.json --format nvfp4 --force
mkdir -p o/fold && ln ck/sharded/tokenizer.json o/fold/tokenizer.json
case="folder output holding a hard link to an input file"; refused 1 "$unsafe.*tokenizer.json" "$QMM" quantize ck/sharded o/fold --format nvfp4 --force
rm -rf o/fold && mkdir -p o/fold2 && ln -s ../../ck/sharded/sub o/fold2/sub
case="folder output whose sub-folder leads into the input"; refused 1 "$unsafe.*leads into" "$QMM" quantize ck/sharded o/fold2 --format nvfp4 --force
rm -rf o/fold2

# ---- 2. outputs are replaced only when they are what qmm writes ---------------------------------
mkfifo o/fifo.safetensors
ln -s /dev/null o/null.safetensors
mkdir -p o/dir.safetensors
case="output is a FIFO, --force";      refused 1 "$unsafe.*FIFO" "$QMM" quantize ck/single.safetensors o/fifo.safetensors --format nvfp4 --force
case="output is a device, --force";    refused 1 "$unsafe.*FIFO, socket or device" "$QMM" quantize ck/single.safetensors o/null.safetensors --format nvfp4 --force
case="output file is a folder";        refused 1 "$unsafe.*a folder" "$QMM" quantize ck/single.safetensors o/dir.safetensors --format nvfp4 --force
case="output folder is a FIFO";        refused 1 "not a folder" "$QMM" quantize ck/sharded o/fifo.safetensors --format nvfp4 --force
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' o/sock.safetensors
  case="output is a socket, --force";  refused 1 "$unsafe.*FIFO, socket or device" "$QMM" quantize ck/single.safetensors o/sock.safetensors --format nvfp4 --force
  case="input is a socket";            refused 1 "neither a regular file nor a folder" "$QMM" inspect o/sock.safetensors
fi
case="empty output path";             refused 1 "output path is empty" "$QMM" quantize ck/single.safetensors '' --format nvfp4
case="empty output path, --force";    refused 1 "output path is empty" "$QMM" quantize ck/sharded '' --format nvfp4 --force
case="output folder's parent missing"; refused 1 "does not exist" "$QMM" quantize ck/sharded o/a/b/c --format nvfp4
case="output exists without --force"; run 0 "wrote" "$QMM" quantize ck/single.safetensors o/q.safetensors --format nvfp4
case="output exists without --force"; refused 1 "exists; use --force" "$QMM" quantize ck/single.safetensors o/q.safetensors --format mxfp4
case="a failed run (NaN) into a new folder"; refused 1 "q_proj.weight.*finite|NaN|non.finite" "$QMM" quantize ck/bad o/new_bad --format nvfp4
cp o/q.safetensors o/keep.safetensors
case="a failed run (NaN) over an output, --force"; refused 1 "finite|NaN" "$QMM" quantize ck/bad/model-00002-of-00002.safetensors o/keep.safetensors --format nvfp4 --force
case="--force over a regular file";   run 0 "wrote" "$QMM" quantize ck/single.safetensors o/q.safetensors --format fp8 --force
case="--force over a folder output";  run 0 "wrote" "$QMM" quantize ck/sharded o/out --format nvfp4
case="--force over a folder output";  run 0 "wrote" "$QMM" quantize ck/sharded o/out --format mxfp4 --force
case="no staging folder left";        run 0 "" true
if [ -n "$(find . -name '.qmm-partial-*')" ]; then fail "a staging folder was left: $(find . -name '.qmm-partial-*')"; fi

# ---- 3. inputs that are not regular files are refused at once, never waited on -------------------
mkfifo fifo
mkdir -p fifodir && mkfifo fifodir/model.safetensors.index.json
mkdir -p cfgfifo && cp ck/single.safetensors cfgfifo/model.safetensors && mkfifo cfgfifo/hf_quant_config.json
case="inspect a FIFO";                 refused 1 "neither a regular file nor a folder" "$QMM" inspect fifo
case="inspect a device";               refused 1 "neither a regular file nor a folder" "$QMM" inspect /dev/null
case="inspect a folder whose index is a FIFO"; refused 1 "regular file" "$QMM" inspect fifodir
case="inspect a folder whose config is a FIFO"; refused 0 "tensors in 1 file" "$QMM" inspect cfgfifo
case="verify with a FIFO as ORIG";     refused 1 "neither a regular file nor a folder" "$QMM" verify fifo o/q.safetensors
case="verify with a FIFO as QUANT";    refused 1 "neither a regular file nor a folder" "$QMM" verify ck/single.safetensors fifo
case="verify with /dev/zero";          refused 1 "neither a regular file nor a folder" "$QMM" verify /dev/zero o/q.safetensors
case="quantize a FIFO";                refused 1 "neither a regular file nor a folder" "$QMM" quantize fifo o/f.safetensors --format nvfp4
case="quantize a folder whose index is a FIFO"; refused 1 "regular file" "$QMM" quantize fifodir o/f --format nvfp4
mkfifo cfgfifo/config.json
case="quantize with a FIFO config.json"; refused 1 "not a regular file" "$QMM" quantize cfgfifo/model.safetensors o_cf/cf.safetensors --format nvfp4

# ---- 4. verify fails when it should --------------------------------------------------------------
"$QMM" quantize ck/single.safetensors v_nv.safetensors --format nvfp4 >/dev/null &&
  "$QMM" quantize ck/single.safetensors v_mx/q.safetensors --format mxfp4 >/dev/null &&
  "$QMM" quantize ck/single.safetensors v_f8/q.safetensors --format fp8 >/dev/null || fail "quantizing for verify"
L0=model.layers.0.self_attn.q_proj
case="verify of a good checkpoint";    run 0 " 0 problems" "$QMM" verify ck/single.safetensors v_nv.safetensors --max-rel-err 0.2
# byte 21 of a 64 x 4 E4M3 block-scale tensor: row 5, block 1 (columns 16..31)
for code in 0x7f 0xff; do
  "$HOSTILE" corrupt v_nv.safetensors bad_nv.safetensors $L0.weight_scale 21 $code || fail "corrupt"
  case="verify: NVFP4 E4M3 NaN scale $code"; run 1 "$L0.weight: decodes to NaN at row 5, block 1 \(columns 16..31\)" "$QMM" verify ck/single.safetensors bad_nv.safetensors --max-rel-err 0.1
done
"$HOSTILE" corrupt v_mx/q.safetensors bad_mx.safetensors $L0.weight_scale 3 0xff || fail "corrupt"
case="verify: MXFP4 E8M0 0xFF scale";  run 1 "$L0.weight: decodes to NaN at row 1, block 1 \(columns 32..63\)" "$QMM" verify ck/single.safetensors bad_mx.safetensors
for code in 0x7f 0xff; do
  "$HOSTILE" corrupt v_f8/q.safetensors bad_f8.safetensors $L0.weight 130 $code || fail "corrupt"
  case="verify: FP8 NaN element $code"; run 1 "$L0.weight: decodes to NaN at row 2, column 2" "$QMM" verify ck/single.safetensors bad_f8.safetensors --max-rel-err 1
done
# an F32 scale with its exponent all ones (bytes 2 and 3, little-endian): an infinity or a NaN
"$HOSTILE" corrupt v_f8/q.safetensors bad_f8s0.safetensors $L0.weight_scale 3 0x7f &&
  "$HOSTILE" corrupt bad_f8s0.safetensors bad_f8s.safetensors $L0.weight_scale 2 0x80 || fail "corrupt"
case="verify: FP8 infinite tensor scale"; run 1 "$L0.*finite" "$QMM" verify ck/single.safetensors bad_f8s.safetensors
"$HOSTILE" corrupt v_nv.safetensors bad_nv20.safetensors $L0.weight_scale_2 3 0xff &&
  "$HOSTILE" corrupt bad_nv20.safetensors bad_nv2.safetensors $L0.weight_scale_2 2 0xc0 || fail "corrupt"
case="verify: NVFP4 NaN tensor scale"; run 1 "$L0.*finite" "$QMM" verify ck/single.safetensors bad_nv2.safetensors
# expert 2 of 3 (16 x 2 scales each): byte 64 + 2 * 7 + 1 is row 7, block 1 of the third expert
"$HOSTILE" corrupt ck/experts_mxfp4.safetensors bad_ex.safetensors model.layers.0.mlp.experts.gate_up_proj_scales 79 0xff || fail "corrupt"
case="verify: gpt-oss expert scale 0xFF"; run 1 "gate_up_proj\[2\]: decodes to NaN at row 7, block 1" "$QMM" verify ck/experts.safetensors bad_ex.safetensors
for bad in nan inf -1 -0.1 '' abc 0x1p-3 1e999 ' 0.1' '0.1 ' +0.1; do
  case="verify --max-rel-err '$bad'";  run 2 "max-rel-err takes a finite number" "$QMM" verify ck/single.safetensors v_nv.safetensors --max-rel-err "$bad"
done
case="verify --max-rel-err twice";     run 2 "given twice" "$QMM" verify ck/single.safetensors v_nv.safetensors --max-rel-err 1 --max-rel-err 1
case="verify --max-rel-err 0 fails on any error"; run 1 "above 0" "$QMM" verify ck/single.safetensors v_nv.safetensors --max-rel-err 0

# ---- 5. every number on the command line through one strict parser ------------------------------
for v in 144115188075855873 -1 0 '' ' 8' '8 ' +8 0x10 1e3 8.0 18446744073709551616 9223372036854775808 '8,'; do
  case="run --m '$v'";                 run 2 "bad value|--help" "$QMM" run --backend reference --m "$v"
  case="bench --m '$v'";               run 2 "bad option|--help" "$QMM" bench --backend reference --m "$v"
done
case="run --m within range, too big for memory"; run 2 "more than this machine" "$QMM" run --backend reference --m 1099511627776 --n 1 --k 1
case="run --n x --k overflow";         run 2 "more than this machine|can address" "$QMM" run --backend reference --n 1099511627776 --k 1099511627776
case="bench huge shape";               run 2 "more than this machine|can address" "$QMM" bench --backend reference --shapes 1099511627776:1099511627776
case="bench --shapes '1:'";            run 2 "bad option" "$QMM" bench --backend reference --shapes 1:
case="bench --shapes '-1:4'";          run 2 "bad option" "$QMM" bench --backend reference --shapes -1:4
case="bench --reps 65";                run 2 "bad option" "$QMM" bench --backend reference --reps 65
case="bench --rotate-mb nan";          run 2 "bad option" "$QMM" bench --backend reference --rotate-mb nan
case="bench --cool-ms inf";            run 2 "bad option" "$QMM" bench --backend reference --cool-ms inf
case="run --seed 2^64";                run 2 "bad value" "$QMM" run --backend reference --seed 18446744073709551616
case="run --threads 0";                run 2 "bad value" "$QMM" run --backend reference --threads 0
case="quantize --threads 65";          run 2 "--threads takes 1 to 64" "$QMM" quantize ck/single.safetensors o/t.safetensors --format nvfp4 --threads 65
case="quantize --threads -1";          run 2 "--threads takes 1 to 64" "$QMM" quantize ck/single.safetensors o/t.safetensors --format nvfp4 --threads -1
case="conflicting --format";           refused 2 "'--format' given twice" "$QMM" quantize ck/single.safetensors o/t.safetensors --format nvfp4 --format mxfp4
case="conflicting --m (run)";          run 2 "'--m' given twice" "$QMM" run --backend reference --m 1 --m 2
case="conflicting --backend (bench)";  run 2 "'--backend' given twice" "$QMM" bench --backend reference --backend cpu

# ---- 6. names from a file are printed escaped ---------------------------------------------------
"$HOSTILE" names names.safetensors || fail "names"
"$QMM" quantize names.safetensors names_q/q.safetensors --format nvfp4 >/dev/null 2>&1 || fail "quantize names"
esc=$(printf '\033') bel=$(printf '\a') csi=$(printf '\302\233')
for cmd in "inspect names.safetensors" "inspect names_q/q.safetensors" "verify names.safetensors names_q/q.safetensors" \
           "verify ck/single.safetensors names_q/q.safetensors"; do
  case="escaped: qmm $cmd"
  cases=$((cases + 1))
  # shellcheck disable=SC2086
  out=$(timeout "$LIMIT" "$QMM" $cmd 2>&1)
  case "$out" in
    *"$esc"* | *"$bel"* | *"$csi"*) fail "a control character reached the terminal" ;;
    *'\x1b[2Jevil'*) ;;
    *) fail "the escaped name is missing" ;;
  esac
done

echo "check_hostile: $cases cases, $failed failed"
[ "$failed" = 0 ]
