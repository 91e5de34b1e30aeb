#!/usr/bin/env bash
# Install Debian's Slurm 22.05, slurmdbd, munge and MariaDB so tests/slurm can start a private
# single-node cluster. Idempotent: does nothing when every binary is already there.
set -euo pipefail
need=(slurmctld slurmd slurmdbd sacct sbatch munged mariadbd)
missing=0
for bin in "${need[@]}"; do
    command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || missing=1
done
[ "$missing" = 0 ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    slurm-wlm slurmdbd munge mariadb-server >/dev/null
