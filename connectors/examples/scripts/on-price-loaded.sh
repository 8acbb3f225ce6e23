#!/bin/sh
# Example operator hook for PriceLoadingCompleted (connectors/examples/price-loaded-hook.yaml).
# Input:  the event as a structured-mode CloudEvent (one JSON object) on stdin;
#         its attributes as CE_* variables (CE_ID, CE_CORRELATIONID, CE_PARTITIONKEY, …);
#         the delivery as CEG_* variables (CEG_SUBSCRIPTION, CEG_ATTEMPT, …).
# Exit:   0 handled · 75 (EX_TEMPFAIL) try again later · anything else: dead letter
#         (the end of stderr becomes the dead-letter reason).
set -u
event=$(cat) || exit 75
case "$event" in
  '{'*) ;;
  *) echo "stdin is not a CloudEvent JSON object" >&2; exit 65 ;;
esac
log_dir=${HOOK_LOG_DIR:-/tmp/ce-gateway-hooks}
mkdir -p "$log_dir" || { echo "cannot create $log_dir" >&2; exit 75; }
printf '%s\t%s\t%s\t%s\t%s\n' "${CE_TIME:-}" "$CE_ID" "$CE_CORRELATIONID" "${CE_PARTITIONKEY:-}" "$CEG_ATTEMPT" \
  >> "$log_dir/price-loaded.log" || { echo "cannot append to $log_dir/price-loaded.log" >&2; exit 75; }
