#!/usr/bin/env bash
# Re-create the real partial logs bundled in src/heard/samples/ (needs heard,
# espeak-ng and sox). The logs are committed; run this only to refresh them.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=$here/src/heard/samples
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python "$here/tools/record_partials.py" "$here/tests/data/audio/jfk.flac" -o "$out/jfk_partials.jsonl"

# One long run-on sentence with no punctuation, spoken by espeak-ng.
espeak-ng -s 165 -w "$tmp/runon.wav" "so we drove down to the market early on saturday \
and then we bought apples and pears and a loaf of bread and my sister said we should call \
our uncle who lives near the river because he has a boat and he might take us out on the \
lake this weekend if the weather stays warm and nobody has to work"
python "$here/tools/record_partials.py" "$tmp/runon.wav" -o "$out/runon_partials.jsonl"
