#!/usr/bin/env bash
# Starts the local services vigil's tests talk to, when they are not already running:
# PostgreSQL (127.0.0.1:5432) and NATS with JetStream (127.0.0.1:4222), and installs what the
# Kerberos tests need (an MIT KDC the tests start themselves in a temp folder, kinit, and the
# headers the optional `kerberos` binding compiles against, so run this before `npm ci`), and
# Debian's Chromium for the web console's browser tests. Idempotent.
# Usage: scripts/services.sh start | status
set -euo pipefail

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
  local port=$1 name=$2
  for _ in $(seq 1 50); do
    if port_open "$port"; then return 0; fi
    sleep 0.2
  done
  echo "services: $name did not open port $port" >&2
  return 1
}

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

start_postgres() {
  if port_open 5432; then return 0; fi
  if ! command -v pg_ctlcluster >/dev/null; then
    apt_install postgresql
  fi
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  wait_port 5432 PostgreSQL
}

start_nats() {
  if port_open 4222; then return 0; fi
  if [ ! -x /usr/sbin/nats-server ]; then
    apt_install nats-server
  fi
  mkdir -p /var/lib/nats-server
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server
  wait_port 4222 NATS
}

install_kerberos() {
  if [ -x /usr/sbin/krb5kdc ] && [ -x /usr/sbin/kdb5_util ] && command -v kinit >/dev/null &&
    [ -f /usr/include/gssapi/gssapi.h ]; then
    return 0
  fi
  apt_install krb5-kdc krb5-admin-server krb5-user libkrb5-dev
}

install_chromium() {
  if command -v chromium >/dev/null; then return 0; fi
  apt_install chromium
}

case "${1:-start}" in
  start)
    start_postgres
    start_nats
    install_kerberos
    install_chromium
    echo "services: PostgreSQL on 5432 and NATS on 4222 are up; Kerberos packages and Chromium installed"
    ;;
  status)
    port_open 5432 && echo "PostgreSQL: up" || echo "PostgreSQL: down"
    port_open 4222 && echo "NATS: up" || echo "NATS: down"
    ;;
  *)
    echo "usage: $0 start|status" >&2
    exit 2
    ;;
esac
