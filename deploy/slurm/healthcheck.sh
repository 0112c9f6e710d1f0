#!/bin/bash
# Slurm HealthCheckProgram without NHC: slurm.conf
#   HealthCheckProgram=/usr/local/sbin/gpudx-healthcheck.sh
#   HealthCheckInterval=300
#
# slurmd runs this as root; Slurm does not act on its exit status: "Any
# action to be taken must be explicitly performed by the program" (slurm.conf
# man page), so it drains the node itself with scontrol when gpudx check
# says so (exit 1). It never resumes a node: an operator (or NHC) does.
# When the kernel log cannot be read (exit 2) it reports on stderr and
# leaves the node alone. Slurm kills it after 60 seconds.
set -u
GPUDX=${GPUDX:-gpudx}
SCONTROL=${SCONTROL:-scontrol}
NODE=${NODE:-$(hostname -s)}

MSG=$("$GPUDX" check --format nhc "$@")
RC=$?
case $RC in
    0) exit 0 ;;
    1) exec "$SCONTROL" update NodeName="$NODE" State=DRAIN Reason="$MSG" ;;
    *) echo "gpudx-healthcheck: gpudx check exited $RC: $MSG" >&2 ; exit "$RC" ;;
esac
