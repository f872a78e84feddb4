#!/bin/sh
# An external policy that answers every batch with something not a plan.
while read -r line; do echo "hello, dcpsim"; done
