/**
 * What a gRPC server call tells the pipeline about its end (issue 25), for every gRPC door (admin
 * gRPC, node RPC): the signal that fires when the client cancels or goes away, and the deadline it
 * sent (grpc-timeout). grpc-js emits "cancelled" on a server call for both a client's cancel and a
 * deadline it enforced itself; the pipeline tells them apart by its own deadline timer.
 */

interface CancellableCall {
  readonly cancelled: boolean;
  once(event: "cancelled", listener: () => void): unknown;
  getDeadline(): Date | number;
}

export function cancelSignal(call: CancellableCall): AbortSignal {
  const ctl = new AbortController();
  if (call.cancelled) ctl.abort();
  else call.once("cancelled", () => ctl.abort());
  return ctl.signal;
}

/** The call's deadline in ms since the epoch; Infinity when the client set none. */
export function deadlineOf(call: CancellableCall): number {
  const d = call.getDeadline();
  return d instanceof Date ? d.getTime() : d;
}
