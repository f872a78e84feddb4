#!/bin/sh
# An external policy that never answers.
exec sleep 3600
