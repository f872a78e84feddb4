#!/bin/sh
# An external policy that exits before answering.
echo "no plans today" >&2
exit 3
