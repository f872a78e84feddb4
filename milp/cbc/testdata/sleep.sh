#!/bin/sh
# A stand-in for cbc that never finishes: the cancellation test kills it.
exec sleep 60
