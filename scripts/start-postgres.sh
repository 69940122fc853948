#!/usr/bin/env bash
# Start a local PostgreSQL for the ledger tests and print its SQLAlchemy URL on stdout (last line).
#
# Idempotent: installs Debian's postgresql when missing, starts the cluster when it is down, creates
# the role and database `gradeflow` when absent. Listens on loopback only (127.0.0.1:$PGPORT).
# Needs root (apt-get, and commands run as the postgres user).
#
#   export GRADEFLOW_TEST_POSTGRES_URL="$(bash scripts/start-postgres.sh | tail -n 1)"
set -euo pipefail

PGPORT="${PGPORT:-5432}"  # for a new cluster; an existing Debian cluster keeps its own port
DB_USER="gradeflow"
DB_NAME="gradeflow"
DB_PASSWORD="${GRADEFLOW_PG_PASSWORD:-gradeflow}"

log() { echo "start-postgres: $*" >&2; }

as_postgres() {
  if command -v runuser >/dev/null 2>&1; then runuser -u postgres -- "$@"; else su postgres -c "$(printf '%q ' "$@")"; fi
}

if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  log "installing postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi

VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
BIN="/usr/lib/postgresql/${VERSION}/bin"

if command -v pg_ctlcluster >/dev/null 2>&1; then
  if ! pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main"' | grep -q .; then
    log "creating cluster ${VERSION}/main"
    pg_createcluster "$VERSION" main -p "$PGPORT" >&2
  fi
  # A drop-in (Debian includes conf.d/) keeps the server on loopback whatever postgresql.conf says.
  printf "listen_addresses = '127.0.0.1'\n" >"/etc/postgresql/${VERSION}/main/conf.d/gradeflow-loopback.conf"
  PGPORT="$(pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" {print $3}')"
  if ! pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" && $4 == "online"' | grep -q .; then
    log "starting cluster ${VERSION}/main"
    pg_ctlcluster "$VERSION" main start >&2
  fi
else
  DATA="/var/lib/postgresql/gradeflow-data"
  if [ ! -f "$DATA/PG_VERSION" ]; then
    install -d -o postgres -g postgres "$DATA"
    as_postgres "$BIN/initdb" -D "$DATA" -A scram-sha-256 --username=postgres --pwfile=<(echo postgres) >&2
  fi
  if ! as_postgres "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    as_postgres "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -c port=$PGPORT -c unix_socket_directories=/var/run/postgresql" start >&2
  fi
fi

for _ in $(seq 1 30); do
  if as_postgres psql -p "$PGPORT" -qAtc "select 1" >/dev/null 2>&1; then break; fi
  sleep 1
done

as_postgres psql -p "$PGPORT" -v ON_ERROR_STOP=1 -qAt >&2 <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${DB_USER}') THEN
    CREATE ROLE ${DB_USER} LOGIN PASSWORD '${DB_PASSWORD}';
  ELSE
    ALTER ROLE ${DB_USER} LOGIN PASSWORD '${DB_PASSWORD}';
  END IF;
END \$\$;
SQL
if [ -z "$(as_postgres psql -p "$PGPORT" -qAtc "SELECT 1 FROM pg_database WHERE datname = '${DB_NAME}'")" ]; then
  as_postgres createdb -p "$PGPORT" -O "$DB_USER" "$DB_NAME"
fi

echo "postgresql+psycopg://${DB_USER}:${DB_PASSWORD}@127.0.0.1:${PGPORT}/${DB_NAME}"
