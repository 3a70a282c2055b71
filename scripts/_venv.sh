# Sourced by scripts/happy and scripts/test: make .venv on first use and keep it in step with
# pyproject.toml. Needs only Python >= 3.11 on PATH.
_happy_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_happy_venv="${HAPPY_VENV:-$_happy_root/.venv}"

_happy_python() {
  for py in python3.13 python3.12 python3.11 python3 python; do
    if command -v "$py" >/dev/null 2>&1 &&
      "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  echo "happy: Python 3.11 or newer is needed on PATH" >&2
  return 1
}

# happy_venv EXTRAS: ensure the venv has the project installed with EXTRAS ("" or "dev").
happy_venv() {
  local extras="$1" spec="$_happy_root" stamp
  [ -n "$extras" ] && spec="$_happy_root[$extras]"
  stamp="$_happy_venv/.happy-stamp${extras:+-$extras}"
  local want
  want=$(cat "$_happy_root/pyproject.toml" | cksum)
  if [ ! -x "$_happy_venv/bin/python" ]; then
    "$(_happy_python)" -m venv "$_happy_venv" || return 1
  fi
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "happy: installing into $_happy_venv (first run, or pyproject.toml changed)..." >&2
    "$_happy_venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$spec" >&2 || return 1
    echo "$want" > "$stamp"
  fi
}
