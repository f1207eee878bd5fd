#!/bin/sh
# Registers the service's namespace on a Temporal server once it answers, if it is not there yet,
# and waits until the frontend serves workflow calls on it: workers and gateways refuse to start on a namespace the server does not know
# (temporal/client.ts). The service's custom search attributes are registered by its first worker
# (temporal/search-attributes.ts). docker-compose's temporal-namespace job runs it with
# temporalio/admin-tools' CLI; the rehearsal with the project's own (temporal/binary.ts).
set -eu
cli=${TEMPORAL_CLI:-temporal}
namespace=${TEMPORAL_NAMESPACE:-default}
# Closed workflows' histories are kept this long (temporalio/auto-setup's default).
retention=${TEMPORAL_NAMESPACE_RETENTION:-24h}
: "${TEMPORAL_ADDRESS:?set TEMPORAL_ADDRESS (host:port of the frontend)}"
export TEMPORAL_ADDRESS

tries=0
until "$cli" operator cluster health >/dev/null 2>&1; do
  tries=$((tries + 1))
  [ "$tries" -le 120 ] || { echo "temporal namespace: $TEMPORAL_ADDRESS not serving after 120 s" >&2; exit 1; }
  sleep 1
done
if ! "$cli" operator namespace describe --namespace "$namespace" >/dev/null 2>&1; then
  "$cli" operator namespace create --namespace "$namespace" --retention "$retention"
fi
# `namespace describe` reads the database, and succeeds at once; a workflow call goes through the
# frontend's namespace cache, which learns of a new namespace at its next refresh (10 s).
tries=0
until "$cli" workflow count --namespace "$namespace" >/dev/null 2>&1; do
  tries=$((tries + 1))
  [ "$tries" -le 60 ] || { echo "temporal namespace: $namespace created but not served after 60 s" >&2; exit 1; }
  sleep 1
done
echo "temporal namespace: $namespace ready"
