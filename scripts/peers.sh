#!/usr/bin/env bash
# Installs the peers bench/peers.bench.ts compares vigil with: Debian's `victoria-metrics` package
# (the single-node server, /usr/bin/victoria-metrics). The bench starts its own instance on a temp
# dir and a loopback port, so the package's system service is not wanted: when the package's
# install started it, this stops it and disables it (that unit only), and says so. Idempotent; run
# as root, or as a user with sudo.
# Usage: scripts/peers.sh
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

UNIT=victoria-metrics

# The package list is read once when it is more than a day old, or when it does not know the
# package at all (a fresh machine).
apt_update_if_stale() {
  local newest
  newest=$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -newermt '-1 day' 2>/dev/null | head -n 1)
  if [ -z "$newest" ] || ! apt-cache show "$UNIT" >/dev/null 2>&1; then
    echo "peers: apt-get update"
    $SUDO apt-get update -qq
  fi
}

installed() {
  dpkg-query -W -f='${Status}' "$UNIT" 2>/dev/null | grep -q "install ok installed"
}

# The service the package may have started: through systemd where it is the init system, else
# through the package's init script. Only that unit is touched; the bench's own instances (run
# with -storageDataPath in a temp dir) are not.
stop_service() {
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
    if systemctl is-active --quiet "$UNIT"; then
      $SUDO systemctl stop "$UNIT"
      echo "peers: stopped the ${UNIT} system service the package started"
    fi
    if systemctl is-enabled --quiet "$UNIT" 2>/dev/null; then
      $SUDO systemctl disable --quiet "$UNIT"
      echo "peers: disabled the ${UNIT} system service (the bench starts its own instance)"
    fi
  elif [ -x "/etc/init.d/$UNIT" ]; then
    if "/etc/init.d/$UNIT" status >/dev/null 2>&1; then
      $SUDO "/etc/init.d/$UNIT" stop >/dev/null
      echo "peers: stopped the ${UNIT} service the package started (/etc/init.d/${UNIT})"
    fi
    if command -v update-rc.d >/dev/null; then $SUDO update-rc.d "$UNIT" disable >/dev/null 2>&1 || true; fi
  fi
}

if installed; then
  echo "peers: ${UNIT} $(dpkg-query -W -f='${Version}' "$UNIT") already installed"
else
  apt_update_if_stale
  echo "peers: apt-get install ${UNIT}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$UNIT" >/dev/null
  echo "peers: installed ${UNIT} $(dpkg-query -W -f='${Version}' "$UNIT")"
fi
stop_service
command -v victoria-metrics
