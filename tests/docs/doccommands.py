"""Turn a Markdown document's shell blocks into one bash script, run top to bottom as a reader would.

Every ```sh block runs, in order, in one bash process (`set -euo pipefail`), so an `export` in one
block holds in the next. A block whose first command is `vc-scheduler sandbox ...` starts that
sandbox in the background (as the reader does in a second terminal), stopping the previous one
first (Ctrl-C), and waits for its first line. A comment just before a block may say:

- `<!-- doc-test: before: COMMAND -->`: start COMMAND in the background first (e.g. `make demo`);
- `<!-- doc-test: skip: REASON -->`: do not run the block; the reason is reported.

Lines starting with `#` inside blocks are the expected output shown to the reader: comments for bash.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

FENCE = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!-- doc-test: (skip|before): (.*?) -->\s*$")


@dataclass
class Block:
    line: int
    text: str
    skip: str = ""
    before: str = ""


@dataclass
class DocScript:
    script: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def skipped(self) -> list[Block]:
        return [b for b in self.blocks if b.skip]


def blocks(markdown: str) -> list[Block]:
    out = []
    for m in FENCE.finditer(markdown):
        line = markdown.count("\n", 0, m.start()) + 1
        prev = markdown[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        b = Block(line, m.group(1))
        mk = MARKER.search(prev)
        if mk is not None:
            if mk.group(1) == "skip":
                b.skip = mk.group(2)
            else:
                b.before = mk.group(2)
        out.append(b)
    return out


def _leading_command(text: str) -> tuple[str, str]:
    """(first command with its continuation lines, the rest of the block)."""
    lines = text.split("\n")
    cmd = []
    while lines:
        line = lines.pop(0)
        cmd.append(line)
        if not line.rstrip().endswith("\\"):
            break
    return "\n".join(cmd), "\n".join(lines)


# `set -m`: background jobs get their own process group and take Ctrl-C (SIGINT), which a
# non-interactive shell would otherwise make them ignore; the whole group is stopped as a reader's
# Ctrl-C stops `make demo` and the sandbox under it.
PRELUDE = r"""set -euo pipefail
set -m
BG=""
LOGS="${DOCTEST_TMP:?}"
stop_bg() {
  if [ -n "$BG" ]; then
    kill -INT -- "-$BG" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$BG" 2>/dev/null || break; sleep 0.5; done
    kill -TERM -- "-$BG" 2>/dev/null || true
    wait "$BG" 2>/dev/null || true
    BG=""
  fi
}
trap stop_bg EXIT
start_bg() {  # start_bg LOG COMMAND...: run in the background, wait for the sandbox's first line
  stop_bg
  local log="$1"; shift
  ( set +e; eval "$@" ) >"$log" 2>&1 &
  BG=$!
  for _ in $(seq 1 240); do
    grep -q "sandbox API server at" "$log" && return 0
    kill -0 "$BG" 2>/dev/null || { cat "$log" >&2; echo "background command exited" >&2; return 1; }
    sleep 0.5
  done
  cat "$log" >&2; echo "background command did not start in time" >&2; return 1
}
"""


def to_script(markdown: str, name: str) -> DocScript:
    doc = DocScript(PRELUDE)
    parts = [PRELUDE]
    for i, b in enumerate(blocks(markdown)):
        doc.blocks.append(b)
        if b.skip:
            continue
        parts.append(f"echo '>>> {name}:{b.line}' >&2")
        if b.before:
            parts.append(f'start_bg "$LOGS/bg-{i}.log" {shlex.quote(b.before)}')
        text = b.text
        first, rest = _leading_command(text.lstrip())
        words = first.split()
        # `vc-scheduler sandbox` or `.venv/bin/vc-scheduler sandbox`: a server the reader leaves running
        if len(words) > 1 and words[0].rsplit("/", 1)[-1] == "vc-scheduler" and words[1] == "sandbox":
            parts.append(f'start_bg "$LOGS/bg-{i}.log" {shlex.quote(first)}')
            text = rest
        parts.append(text)
    parts.append("stop_bg")
    doc.script = "\n".join(parts) + "\n"
    return doc
