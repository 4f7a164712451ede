# The checkpoint commands end to end: make a small bf16/fp16/fp32 checkpoint, quantize it in every
# format (sharded folder and single file), inspect and verify each result, refuse to overwrite without
# --force, and leave --exclude'd weights alone.
# Inputs: -DQMM=<qmm tool> -DMAKE=<make_checkpoint> -DWORK=<scratch folder>
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(run expect_rc out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL "${expect_rc}")
    message(FATAL_ERROR "exit code ${rc}, expected ${expect_rc}: ${ARGN}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()

function(expect_match text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: output does not match '${regex}':\n${text}")
  endif()
endfunction()

run(0 out "${MAKE}" "${WORK}/src")

# Bounds on the relative error of each format on these weights (uniform values, a few large ones):
# E2M1 with good scales stays near 0.1; FP8 E4M3 near 0.03.
set(bound_nvfp4 0.15)
set(bound_mxfp4 0.25)
set(bound_fp8 0.05)
set(bound_fp8_channel 0.05)
# The weight with K = 33 cannot be stored as packed nibbles unambiguously: 4-bit formats leave it alone.
set(count_nvfp4 6)
set(count_mxfp4 6)
set(count_fp8 8)
set(count_fp8_channel 8)
foreach(fmt nvfp4 mxfp4 fp8 fp8_channel)
  set(out_dir "${WORK}/${fmt}")
  run(0 out "${QMM}" quantize "${WORK}/src/sharded" "${out_dir}" --format ${fmt})
  expect_match("${out}" "${count_${fmt}} of [0-9]+ tensors quantized" "${fmt} quantize")
  foreach(f model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json
            hf_quant_config.json config.json tokenizer.json sub/extra.txt)
    if(NOT EXISTS "${out_dir}/${f}")
      message(FATAL_ERROR "${fmt}: ${f} was not written")
    endif()
  endforeach()
  file(READ "${out_dir}/config.json" cfg)
  expect_match("${cfg}" "\"quantization_config\"" "${fmt} config.json")
  expect_match("${cfg}" "\"model_type\": \"llama\"" "${fmt} config.json keeps the source")
  run(0 out "${QMM}" inspect "${out_dir}")
  set(shown "${fmt}")
  if(fmt STREQUAL "fp8")
    set(shown "fp8_tensor")
  endif()
  expect_match("${out}" "model.layers.1.mlp.up_proj.weight +[A-Z0-9_]+ +\\(96, [0-9]+\\) +[0-9]+ +${shown} 96 x 64" "${fmt} inspect")
  expect_match("${out}" "model.embed_tokens.weight +BF16 +\\(128, 64\\)" "${fmt} inspect: embeddings unchanged")
  if(count_${fmt} EQUAL 6)
    expect_match("${out}" "model.layers.0.odd.weight +BF16" "${fmt} inspect: odd K left alone")
  endif()
  expect_match("${out}" "quantization \\(hf_quant_config.json\\)" "${fmt} inspect: config")
  run(0 out "${QMM}" verify "${WORK}/src/sharded" "${out_dir}" --max-rel-err ${bound_${fmt}})
  expect_match("${out}" "${count_${fmt}} quantized weights" "${fmt} verify")
  expect_match("${out}" "0 problems" "${fmt} verify")
  # sub-second: the same command again must refuse, then succeed with --force
  run(1 out "${QMM}" quantize "${WORK}/src/sharded" "${out_dir}" --format ${fmt})
  expect_match("${out}" "exists; use --force" "${fmt} refuses to overwrite")
  run(0 out "${QMM}" quantize "${WORK}/src/sharded" "${out_dir}" --format ${fmt} --force)
endforeach()

# the output does not depend on how many tensors are quantized at once
foreach(t 1 3)
  run(0 out "${QMM}" quantize "${WORK}/src/sharded" "${WORK}/threads_${t}" --format nvfp4 --threads ${t})
endforeach()
foreach(f model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${WORK}/threads_1/${f}" "${WORK}/threads_3/${f}"
                  RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "--threads 1 and --threads 3 wrote different ${f}")
  endif()
endforeach()
run(2 out "${QMM}" quantize "${WORK}/src/sharded" "${WORK}/threads_x" --format nvfp4 --threads 0)
expect_match("${out}" "--threads takes 1 to 64" "--threads 0 refused")

# a tensor that cannot be quantized (a NaN, in the second shard): refused, and no shard of this run left
# behind, not even the first, complete one; with --force over a finished output, that output stays
run(1 out "${QMM}" quantize "${WORK}/src/bad" "${WORK}/bad_out" --format nvfp4)
expect_match("${out}" "model.layers.1.self_attn.q_proj.weight" "the NaN weight is named")
if(EXISTS "${WORK}/bad_out")
  file(GLOB left "${WORK}/bad_out/*")
  message(FATAL_ERROR "a failed quantize left ${WORK}/bad_out behind: ${left}")
endif()
file(MAKE_DIRECTORY "${WORK}/bad_force")
file(COPY "${WORK}/nvfp4/model-00001-of-00002.safetensors" DESTINATION "${WORK}/bad_force")
run(1 out "${QMM}" quantize "${WORK}/src/bad" "${WORK}/bad_force" --format nvfp4 --force)
file(GLOB left RELATIVE "${WORK}/bad_force" "${WORK}/bad_force/*")
if(NOT left STREQUAL "model-00001-of-00002.safetensors")
  message(FATAL_ERROR "a failed quantize --force changed the folder: ${left}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${WORK}/nvfp4/model-00001-of-00002.safetensors"
                "${WORK}/bad_force/model-00001-of-00002.safetensors" RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "a failed quantize --force replaced an existing shard")
endif()

# the same for a single file: no output file, no temporary left
run(1 out "${QMM}" quantize "${WORK}/src/bad/model-00002-of-00002.safetensors" "${WORK}/bad_single/out.safetensors"
    --format fp8)
file(GLOB left "${WORK}/bad_single/*")
if(left)
  message(FATAL_ERROR "a failed single-file quantize left ${left}")
endif()

# verify notices a quantization that does not match the original
run(1 out "${QMM}" verify "${WORK}/src/sharded" "${WORK}/nvfp4" --max-rel-err 0.001)
expect_match("${out}" "relative error above" "verify --max-rel-err")

# single file, the rceil recipe, and --exclude
run(0 out "${QMM}" quantize "${WORK}/src/single.safetensors" "${WORK}/single_mx/out.safetensors" --format mxfp4
    --recipe rceil --exclude "q_proj")
expect_match("${out}" "2 of [0-9]+ tensors quantized to mxfp4 \\(rceil\\)" "single file quantize")
run(0 out "${QMM}" inspect "${WORK}/single_mx/out.safetensors")
expect_match("${out}" "model.layers.0.self_attn.q_proj.weight +BF16" "--exclude keeps q_proj")
expect_match("${out}" "quantized_by = qmm" "metadata")
if(NOT EXISTS "${WORK}/single_mx/hf_quant_config.json" OR NOT EXISTS "${WORK}/single_mx/config.json")
  message(FATAL_ERROR "single file: config files not written beside the output")
endif()
run(0 out "${QMM}" verify "${WORK}/src/single.safetensors" "${WORK}/single_mx/out.safetensors")
expect_match("${out}" "2 quantized weights" "single verify")
# gpt-oss experts: verify compares each expert of *_blocks / *_scales with the (E, N, K) original
run(0 out "${QMM}" verify "${WORK}/src/experts.safetensors" "${WORK}/src/experts_mxfp4.safetensors" --max-rel-err 0.25)
expect_match("${out}" "3 quantized weights" "experts verify")
expect_match("${out}" "gate_up_proj +\\[  2\\] mxfp4" "experts verify rows")
# a bf16 stack of experts (E, N, K) quantized as a stack: gpt-oss blocks for MXFP4, modelopt experts one by
# one for NVFP4 and FP8; inspect shows the stack, verify compares each expert with its slice of the original
foreach(fmt nvfp4 mxfp4 fp8)
  run(0 out "${QMM}" quantize "${WORK}/src/experts.safetensors" "${WORK}/experts_${fmt}/q.safetensors" --format ${fmt})
  expect_match("${out}" "1 of 1 tensors quantized" "${fmt} experts quantize")
  run(0 out "${QMM}" inspect "${WORK}/experts_${fmt}/q.safetensors")
  expect_match("${out}" "expert stack model.layers.0.mlp.experts.[*.]*gate_up_proj: 3 experts, [a-z0-9_]+ 16 x 64" "${fmt} experts inspect")
  run(0 out "${QMM}" verify "${WORK}/src/experts.safetensors" "${WORK}/experts_${fmt}/q.safetensors" --max-rel-err 0.2)
  expect_match("${out}" "3 quantized weights" "${fmt} experts verify")
endforeach()
run(0 out "${QMM}" inspect "${WORK}/src/experts_mxfp4.safetensors")
expect_match("${out}" "gate_up_proj_blocks +U8 +\\(3, 16, 2, 16\\) +[0-9]+ +mxfp4 3 x 16 x 64" "experts inspect")
expect_match("${out}" "gate_up_proj_scales +U8 +\\(3, 16, 2\\) +[0-9]+ +mxfp4 block scales" "experts inspect scales")

# a recipe of another format, a bad regex, a missing input: clear errors, nothing written
run(1 out "${QMM}" quantize "${WORK}/src/single.safetensors" "${WORK}/x.safetensors" --format nvfp4 --recipe floor)
if(EXISTS "${WORK}/x.safetensors")
  message(FATAL_ERROR "a failed quantize left its output")
endif()
run(2 out "${QMM}" quantize "${WORK}/src/single.safetensors" "${WORK}/x.safetensors" --format nvfp4 --exclude "(")
run(2 out "${QMM}" quantize "${WORK}/src/single.safetensors" "${WORK}/x.safetensors" --format int3)
run(1 out "${QMM}" inspect "${WORK}/nothing.safetensors")
expect_match("${out}" "not found" "inspect of a missing file")
file(WRITE "${WORK}/garbage.safetensors" "garbage garbage")
run(1 out "${QMM}" inspect "${WORK}/garbage.safetensors")
expect_match("${out}" "do not follow its format" "inspect of a malformed file")
file(REMOVE_RECURSE "${WORK}")
message(STATUS "tool checks passed")
