#!/bin/sh
# A stand-in for cbc that crashes.
echo "Segmentation fault (core dumped)" >&2
exit 139
