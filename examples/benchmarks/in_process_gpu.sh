#!/usr/bin/env bash
# Issue 29's figures on a GPU host (../shared/gpu: the core and cugraph groups installed), from
# the repository root:
#   bash examples/benchmarks/in_process_gpu.sh COMMIT [OLD_CHECKOUT OLD_COMMIT] > LOG
# writes in-process.jsonl (examples/benchmarks/in_process.py: a new process's count, per-call
# times in a session beside pylibcugraph, the NetworkX backend, CPU against GPU by size) and,
# with an older checkout, orientation.jsonl: the persisted R-MAT 22 and 24 counts of this
# commit and the older one, alternated twice, and each one's `dtri count --generate rmat:22`.
# Data: the SNAP files are looked for in $DTRI_DATA (default ../shared/data).
set -uo pipefail
source ~/gpu-env.sh
export DTRI_COMMIT=$1
OUT=$(realpath "${OUT:-.}")
DATA=${DTRI_DATA:-../shared/data}
# pylibcugraph's libraries (../shared/gpu/README.md)
export LD_LIBRARY_PATH=$(find $HOME/gpu-site -type d -name lib64 | tr '\n' ':')$LD_LIBRARY_PATH
export LD_PRELOAD=$(find $HOME/gpu-jit -name 'libnvJitLink.so*' | head -1)
# NetworkX finds dtri's backend through its entry points: a dist-info beside the checkout
export PYTHONPATH=$PWD/.nxwheels/site:$PYTHONPATH
# the host sets PYTHONDONTWRITEBYTECODE=1 and its packages come without bytecode, so every
# process would compile every module it imports (0.87 s of the karate count): compile them
# once, as pip does when it installs
timeout 200 python -m compileall -q -j 0 "$HOME/gpu-site" dtri > /dev/null 2>&1
B=examples/benchmarks; O=$OUT/in-process.jsonl
timeout 150 python $B/in_process.py cli --out $O --runs 3 examples/karate.txt
timeout 200 python $B/in_process.py session --out $O --repeat 20 examples/karate.txt \
  $DATA/ca-CondMat.txt.gz $DATA/wiki-Vote.txt.gz
timeout 150 python $B/in_process.py nx --out $O --repeat 5 $DATA/ca-CondMat.txt.gz
timeout 150 python $B/in_process.py joins --out $O --repeat 30 examples/karate.txt \
  $DATA/ca-CondMat.txt.gz
timeout 200 python $B/in_process.py sizes --out $O --repeat 5 --scales 6-20
if [ $# -ge 3 ]; then
  OLD=$2; OLD_COMMIT=$3; R=$OUT/orientation.jsonl
  for round in 1 2; do
    timeout 120 python $B/orientation_bench.py rmat:22 rmat:24 --orientations degree \
      --orders rank --repeat 3 --peer none >> $R
    (cd $OLD && source ~/gpu-env.sh && DTRI_COMMIT=$OLD_COMMIT timeout 120 python \
      $B/orientation_bench.py rmat:22 rmat:24 --orientations degree --orders rank --repeat 3 \
      --peer none >> $R)
  done
  timeout 60 python -m dtri count --generate rmat:22 --backend gpu --json > $OUT/cli-rmat22-new.json
  (cd $OLD && source ~/gpu-env.sh && timeout 90 python -m dtri count --generate rmat:22 \
    --backend gpu --json > $OUT/cli-rmat22-old.json)
fi
