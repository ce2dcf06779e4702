import { Counter } from "prom-client";
import { registry } from "../metrics/index.js";

/** The dispatch module's metrics (the outbox relay). Registered in the process's one registry (core/metrics/). */
export const metrics = {
  relayDispatched: new Counter({
    name: "qim_relay_dispatched_total",
    help: "Commits the outbox relay appended to the dispatch log and marked COMMITTED",
    registers: [registry],
  }),
  fanoutJobsQueued: new Counter({
    name: "qim_relay_fanout_jobs_queued_total",
    help: "Seqs the outbox relay handed to a fanout job (an audience that may exceed the member budget, or a later seq of a conversation with a job pending); jobs pending = queued - done, summed over the nodes",
    registers: [registry],
  }),
  fanoutJobsDone: new Counter({
    name: "qim_relay_fanout_jobs_done_total",
    help: "Fanout jobs the outbox relay expanded to the end and took off their bucket's queue",
    registers: [registry],
  }),
  fanoutChunks: new Counter({
    name: "qim_relay_fanout_chunks_total",
    help: "Dispatch records (chunks of at most FANOUT_CHUNK_RECIPIENTS recipients) the outbox relay appended for fanout jobs",
    registers: [registry],
  }),
  fanoutRecipients: new Counter({
    name: "qim_relay_fanout_recipients_total",
    help: "Recipients in the chunks the outbox relay appended for fanout jobs",
    registers: [registry],
  }),
  logRecordsRead: new Counter({
    name: "qim_dispatch_log_records_read_total",
    help: "Records this process's consumers read from the dispatch log, by body: memory (appended by this process right after the reader's position: not read from the stream at all), kept (appended by this process, read back as the id alone) or read (whole, over the wire)",
    labelNames: ["body"] as const,
    registers: [registry],
  }),
  lowLatencySkipped: new Counter({
    name: "qim_relay_low_latency_skipped_total",
    help: "Records not handed to the session projection's low-latency path because it was busy (the durable consumer projects them from the log)",
    registers: [registry],
  }),
};
