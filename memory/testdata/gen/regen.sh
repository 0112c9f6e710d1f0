#!/bin/sh
# Regenerates every snapshot in this directory with its .expected.json.
# Run from the repository root: sh memory/testdata/gen/regen.sh
# The output is deterministic: the same commands give the same bytes.
set -e
G="python3 bench/mem/gensnap.py --quiet"
D=memory/testdata/gen
$G --out $D/steady_2.10_p5.pickle --layout 2.10 --protocol 5 --vary --hook --steps 2 --seed 1
$G --out $D/steady_2.0_history.pickle --layout 2.0 --vary --steps 2 --context alloc --seed 2
$G --out $D/steady_2.1_p2.pickle --layout 2.1 --protocol 2 --vary --steps 2 --seed 3
$G --out $D/two_devices_cpp_2.2.pickle.gz --layout 2.2 --devices 2 --cpp-frames --gzip --vary --steps 1 --seed 4
$G --out $D/expandable_2.3.pickle --layout 2.3 --expandable --vary --steps 3 --empty-cache-every 2 --seed 5
$G --out $D/oom_live_tensors_2.5.pickle --layout 2.5 --scenario live_tensors --capacity 2GiB --vary --seed 6
$G --out $D/oom_fragmentation_2.8.pickle --layout 2.8 --scenario fragmentation --capacity 1GiB --after-oom --vary --seed 7
$G --out $D/oom_outside_2.10.pickle --layout 2.10 --scenario outside --capacity 8GiB --outside 5GiB --record-capacity --vary --seed 8
$G --out $D/oom_exceeds_available_2.10.pickle --layout 2.10 --scenario outside --capacity 8GiB --outside 5GiB --vary --seed 13
$G --out $D/pools_streams_pending_2.10.pickle --layout 2.10 --private-pool --side-stream --pending-free --vary --steps 2 --seed 9
$G --out $D/ring_wrapped_windows_2.8.pickle --layout 2.8 --max-entries 300 --paths windows --vary --hook --steps 4 --seed 10
$G --out $D/segments_list.pickle --layout list --vary --steps 2 --seed 11
$G --out $D/leak.pickle --layout 2.10 --scenario leak --vary --steps 2 --seed 12
