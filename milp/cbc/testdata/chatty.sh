#!/bin/sh
PATH=/usr/bin:/bin # the tests may run with a PATH that hides cbc
# A stand-in for cbc that writes 8 MiB of log and a valid solution file for
# a one-variable model: the log must be bounded, the answer still read.
for last; do :; done
head -c 8388608 /dev/zero | tr '\0' 'x'
echo
echo "Enumerated nodes:               7"
echo "Total iterations:               42"
printf 'Optimal - objective value 3\n      0 x  3  0\n' > "$last"
