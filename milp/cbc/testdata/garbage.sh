#!/bin/sh
# A stand-in for cbc that answers nonsense: the last argument is the
# solution file cbc would write.
for last; do :; done
echo "Version: 0.0-fake"
echo "Result - Optimal solution found"
printf 'Confused - objective value 1\n' > "$last"
