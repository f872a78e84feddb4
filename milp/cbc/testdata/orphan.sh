#!/bin/sh
PATH=/usr/bin:/bin # the tests may run with a PATH that hides cbc
# A stand-in for cbc that starts a child which outlives it unless its whole
# process group is killed: 1.5 s on (past exec's WaitDelay of 1 s) the child
# makes the solve's folder again and writes into it.
dir=$PWD
(sleep 1.5; mkdir -p "$dir"; echo late > "$dir/late") &
exec sleep 60
