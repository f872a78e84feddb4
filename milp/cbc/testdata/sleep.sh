#!/bin/sh
PATH=/usr/bin:/bin # the tests may run with a PATH that hides cbc
# A stand-in for cbc that never finishes: the cancellation test kills it.
exec sleep 60
