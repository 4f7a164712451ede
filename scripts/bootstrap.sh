#!/usr/bin/env bash
# Installs what the build and tests need when it is missing: a C compiler, make, CMake >= 3.25,
# python3 with venv. Debian/Ubuntu packages through apt-get (as root, or through sudo when present).
set -euo pipefail

need=()
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || need+=(build-essential)
command -v make >/dev/null 2>&1 || need+=(make)
if command -v cmake >/dev/null 2>&1; then
  v=$(cmake --version | head -n1 | awk '{print $3}')
  if [ "$(printf '%s\n3.25\n' "$v" | sort -V | head -n1)" != "3.25" ]; then need+=(cmake); fi
else
  need+=(cmake)
fi
command -v python3 >/dev/null 2>&1 || need+=(python3)
if command -v python3 >/dev/null 2>&1; then
  tmp=$(mktemp -d)
  if ! python3 -m venv "$tmp/v" >/dev/null 2>&1; then
    pyver=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    need+=(python3-venv "python${pyver}-venv")
  fi
  rm -rf "$tmp"
else
  need+=(python3-venv)
fi

[ ${#need[@]} -eq 0 ] && exit 0
echo "bootstrap: installing ${need[*]}" >&2
if [ "$(id -u)" = 0 ]; then sudo=""
elif command -v sudo >/dev/null 2>&1; then sudo="sudo"
else
  echo "bootstrap: missing ${need[*]} and not root (no sudo): install them with apt-get" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# python3.X-venv may not exist under that name on every release: try the full list, then without it.
$sudo apt-get install -y -qq "${need[@]}" || $sudo apt-get install -y -qq $(printf '%s\n' "${need[@]}" | grep -v '^python3\.[0-9]*-venv$')
