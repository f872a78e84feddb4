#!/bin/sh
# An external policy whose plan places sequence 0 twice and the others never.
while read -r line; do echo '{"groups": [[{"first_rank": 0, "size": 1, "seqs": [0, 0]}]]}'; done
