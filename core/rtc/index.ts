/**
 * RTC signalling (spec 003 §5, issue 28): a call's signals between the online connections of two
 * members of a group, passed through and never stored; which call each user is in (busy, the ring
 * timeout), an offline callee's VoIP push through a pluggable sink within the daily quota. Owns the
 * `rtccall` and `rtcvoip` keys of the users' `{uNNN}` tags, lua/rtc/ and the `qim_rtc_*` metrics.
 * docs/gateway.md "RTC signalling".
 */
export { rtcCallKey, rtcVoipKey } from "./keys.js";
export { rtcMetrics } from "./metrics.js";
export {
  logPushSink, RTC_KIND, RTC_RING_MARK_GRACE_MS, RtcSignalling, type RtcDelivery, type RtcKindName, type RtcOptions, type RtcOutcome, type RtcPush, type RtcPushSink, type RtcSignalRequest, type RtcSignalResult,
} from "./rtc.js";
