import type { AuthenticatedState } from '../auth/authenticate.js';
import type { ServerConfig } from '../config/server-config.js';
import { invalidPayload, type FieldProblem } from '../errors.js';
import type { GatewayContext } from '../http/context.js';
import { sendData } from '../http/envelope.js';
import type { Stage } from '../http/stage.js';
import type { RunNodeStatus } from '../plugins/plugin-api.js';
import { runLinks, type RunRow } from './run-record.js';
import { rerunAsked, type RunCommands } from './run-commands.js';
import { NODE_STATUSES, NODES_IN_RUN } from './run-nodes.js';
import { sseEvent } from './output/run-sse.js';
import type { OutputChunk } from './run-store.js';
import type { RunNodes } from './run-nodes.js';

/** The names of nodes, as a path segment has them (docs/fleet.md, "The inventory"). */
const NODE_NAME = /^[A-Za-z0-9._~-]{1,255}$/;
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1_000;

type RunState = AuthenticatedState & { run: RunRow };

const first = (ctx: GatewayContext, name: string): string | undefined => {
  const value = ctx.query[name];
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined || text === '' ? undefined : text;
};

/** `nodes` (the first NODES_IN_RUN by name) and `node_counts` of a run with nodes, for its answer; {} for another run. */
export async function nodeFields(runNodes: RunNodes | undefined, run: RunRow): Promise<Record<string, unknown>> {
  if (run.node_count === null || !runNodes) return {};
  const [nodes, counts] = await Promise.all([runNodes.page(run.id, { limit: NODES_IN_RUN }), runNodes.counts(run.id)]);
  return { nodes, node_counts: counts, node_count: run.node_count };
}

/** `?node=NAME` of the output route: one node's output, checked to be a node name. */
export function nodeOf(ctx: GatewayContext): string | undefined {
  const node = first(ctx, 'node');
  if (node !== undefined && !NODE_NAME.test(node)) throw invalidPayload([{ field: 'node', rule: 'format', message: 'node must be a node name' }]);
  return node;
}

/**
 * One chunk as an SSE event (docs/fleet.md, "Output"): a run without nodes as docs/runs.md says; a node's output as
 * `{"node", "text"}`, its changes as `node` events; with `?node=`, that node's output only, as plain text, each with
 * its run-wide number. Undefined: not for this stream.
 */
export function chunkEvent(chunk: OutputChunk, node: string | undefined): string | undefined {
  if (chunk.node === undefined) return node === undefined ? sseEvent(chunk.stream, chunk.data, chunk.seq) : undefined;
  if (node !== undefined) return chunk.node === node && chunk.stream !== 'node' ? sseEvent(chunk.stream, chunk.data, chunk.seq) : undefined;
  if (chunk.stream === 'node') return sseEvent('node', chunk.data, chunk.seq);
  return sseEvent(chunk.stream, JSON.stringify({ node: chunk.node, text: chunk.data }), chunk.seq);
}

/**
 * The text form: a run without nodes as it came; a run with nodes with every line prefixed `<node>: ` (a line cut
 * across chunks of a node is prefixed once), or one node's text with `?node=`.
 */
export function plainText(chunks: readonly OutputChunk[], node: string | undefined): string {
  const atLineStart = new Map<string, boolean>();
  let text = '';
  for (const chunk of chunks) {
    if (chunk.stream === 'node') continue;
    if (chunk.node === undefined || node !== undefined) {
      if (chunk.node === node) text += chunk.data;
      continue;
    }
    const key = `${chunk.node}\0${chunk.stream}`;
    const lines = chunk.data.split('\n');
    const last = lines.pop()!;
    for (const [index, line] of lines.entries()) text += `${index === 0 && atLineStart.get(key) === false ? '' : `${chunk.node}: `}${line}\n`;
    if (last !== '') text += `${lines.length === 0 && atLineStart.get(key) === false ? '' : `${chunk.node}: `}${last}`;
    atLineStart.set(key, last === '');
  }
  return text;
}

export interface NodeRoutesServices {
  config: ServerConfig;
  nodes: RunNodes;
  commands: Pick<RunCommands, 'rerun'>;
}

/** `GET runs/{id}/nodes?status=&limit=&cursor=`: a page of a run's nodes by name (keyset: the cursor is the last name). */
export function nodePage(s: NodeRoutesServices): Stage<RunState> {
  return async (ctx) => {
    const problems: FieldProblem[] = [];
    const status = first(ctx, 'status');
    if (status !== undefined && !(NODE_STATUSES as readonly string[]).includes(status))
      problems.push({ field: 'status', rule: 'allowed_values', message: `status must be one of ${NODE_STATUSES.join(', ')}` });
    const limitText = first(ctx, 'limit');
    let limit = DEFAULT_LIMIT;
    if (limitText !== undefined) {
      if (!/^\d{1,4}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > MAX_LIMIT)
        problems.push({ field: 'limit', rule: 'range', message: `limit must be a whole number from 1 to ${MAX_LIMIT}` });
      else limit = Number(limitText);
    }
    const cursor = first(ctx, 'cursor');
    const after = cursor === undefined ? undefined : Buffer.from(cursor, 'base64url').toString('utf8');
    if (after !== undefined && !NODE_NAME.test(after))
      problems.push({ field: 'cursor', rule: 'format', message: 'cursor must be a next_cursor of an earlier page' });
    if (problems.length > 0) throw invalidPayload(problems, 'the query string is invalid');
    const { run } = ctx.state;
    // One row beyond the page says whether another follows: the last page has no cursor to an empty one.
    const read =
      run.node_count === null
        ? []
        : await s.nodes.page(run.id, { limit: limit + 1, ...(status ? { status: status as RunNodeStatus } : {}), ...(after !== undefined ? { after } : {}) });
    const nodes = read.slice(0, limit);
    const last = read.length > limit ? nodes.at(-1) : undefined;
    sendData(ctx, { nodes, next_cursor: last ? Buffer.from(last.name).toString('base64url') : null });
  };
}

/**
 * `POST runs/{id}/rerun {"nodes": "failed" | "all", "payload"?}` (docs/fleet.md, "Reruns"): RunCommands.rerun as the
 * caller (the CLI's `tkgate runs rerun` calls it too), answered with the new run's call's answer.
 */
export function rerun(s: NodeRoutesServices): Stage<RunState> {
  return async (ctx) => {
    const asked = rerunAsked(ctx.request.body as Record<string, unknown>);
    const { run, caller } = ctx.state;
    const answer = await s.commands.rerun(run, asked, {
      authenticated: {
        caller,
        credential: ctx.state.credential,
        ...(ctx.state.session && { session: ctx.state.session }),
        ...(ctx.state.apiKey && { apiKey: ctx.state.apiKey }),
        ...(ctx.state.jwt && { jwt: ctx.state.jwt }),
      },
      requestId: ctx.state.requestId,
    });
    const data = (answer.body as { data?: { run_id?: string } } | undefined)?.data;
    if (answer.status === 202 && data?.run_id) ctx.set('Location', runLinks(s.config.server.base_url, data.run_id).self);
    ctx.status = answer.status;
    ctx.type = 'application/json';
    ctx.body = answer.body;
  };
}
