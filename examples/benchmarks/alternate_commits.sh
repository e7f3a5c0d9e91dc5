#!/usr/bin/env bash
# One benchmark at this checkout and at an older commit, alternated, so that both meet the
# same machine state (a regression check: the ratio is what counts).
#
#   bash examples/benchmarks/alternate_commits.sh OLD ROUNDS OUT.jsonl SCRIPT [ARGS...]
#   bash examples/benchmarks/alternate_commits.sh 70409af 2 regression.jsonl \
#       examples/benchmarks/orientation_bench.py rmat:22 rmat:24 --orientations degree \
#       --orders rank --repeat 3 --peer none
#
# The older commit's dtri and benchmarks are unpacked with `git archive` into a scratch
# folder and run from there; each line the script prints goes to OUT.jsonl, tagged with its
# commit (DTRI_COMMIT), in the order run. On a host whose copy of the repository has no .git
# of its own (a GPU host gets the working tree only), set DTRI_COMMIT to this tree's commit
# and OLD_TREE to a copy of the older commit made where .git is and carried along:
#   git archive OLD dtri examples/benchmarks pyproject.toml | tar -x -C .gpu/base-OLD
#   DTRI_COMMIT=abc1234 OLD_TREE=.gpu/base-OLD bash examples/benchmarks/alternate_commits.sh OLD ...
set -euo pipefail
old=$1 rounds=$2 out=$(realpath -m "$3"); shift 3
here=${DTRI_COMMIT:-$(git rev-parse --short HEAD)}
if [ -n "${OLD_TREE:-}" ]; then
    scratch=$(realpath "$OLD_TREE")
else
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    git archive "$old" dtri examples/benchmarks pyproject.toml | tar -x -C "$scratch"
fi
for _ in $(seq "$rounds"); do
    DTRI_COMMIT=$here python "$@" >> "$out"
    (cd "$scratch" && PYTHONPATH="$scratch${PYTHONPATH:+:$PYTHONPATH}" DTRI_COMMIT=$old \
        python "$@" >> "$out")
done
