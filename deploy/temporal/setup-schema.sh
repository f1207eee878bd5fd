#!/bin/sh
# Applies the Temporal server's own SQL schema to its two databases with its own schema tool
# (temporal-sql-tool): the version tables first (setup-schema -v 0.0, a no-op once they exist),
# then every versioned step up to the server's (update-schema). Safe to run on every start, as
# temporalio/auto-setup did. The databases must exist and be owned by TEMPORAL_DB_USER
# (docker-compose's db-roles job makes them). docker-compose's temporal-schema job runs it in
# temporalio/admin-tools, whose defaults these are; the rehearsal runs it with the tool and the
# schema folder built from go.temporal.io/server (temporal/server-binary.ts).
#
# The password travels in SQL_PASSWORD, which the tool reads, never on a command line.
set -eu
tool=${TEMPORAL_SQL_TOOL:-temporal-sql-tool}
schema=${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}
export SQL_PLUGIN=postgres12
export SQL_HOST="${TEMPORAL_DB_HOST:-postgres}"
export SQL_PORT="${TEMPORAL_DB_PORT:-5432}"
export SQL_USER="${TEMPORAL_DB_USER:-temporal}"
export SQL_PASSWORD="${TEMPORAL_DB_PASSWORD:-}"

apply() {
  echo "temporal schema: $1 ($2)"
  SQL_DATABASE="$1" "$tool" setup-schema -v 0.0
  SQL_DATABASE="$1" "$tool" update-schema -d "$schema/$2/versioned"
}
apply "${TEMPORAL_DB_NAME:-temporal}" temporal
apply "${TEMPORAL_VISIBILITY_DB_NAME:-temporal_visibility}" visibility
echo "temporal schema: up to date"
