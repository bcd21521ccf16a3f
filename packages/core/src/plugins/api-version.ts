import type { ApiRange } from './plugin-api.js';

/**
 * The plugin API this core offers. MAJOR goes up on an incompatible change; MINOR on an addition
 * (1.1: declareErrors, reply, call.method, call.clientAddress, scoped loggers, migrations;
 * 1.2: call.onClientGone, AdmissionGate.tryEnter, jsonText for answers spliced without parsing;
 * 1.3: useMiddleware, Koa middleware at named points of the request path;
 * 1.4: call.trace, the request's W3C trace context and child spans; call.addAuditDetails and
 * EndpointType.audited, for the audit trail; CheckEnvironment.toolkitFile, for files named relative to the
 * toolkit file;
 * 1.5: call.callerId, the authenticated user, for state never shared between users; GatewayError's
 * logLevel; EndpointType.describePayload, optional payload fields for the OpenAPI description;
 * PrepareOptions.page, LIMIT and OFFSET bound per call; path templates: CheckEnvironment.pathParams and
 * `path_params` in a template endpoint's request context; call.incoming, the client's request as received,
 * EndpointType.methods and StreamedResponse headers sent several times, for a type that forwards the request
 * itself; secrets, references to secrets kept outside toolkit files, their schemes and the mask of their
 * values; EndpointType.detached and runDetached, endpoints that run as jobs (runs) writing their output to a
 * sink, with a concurrencyKey that may be `$path.<name>`; DetachedPlan.room, the type's own bound on the runs an
 * instance starts; EndpointType.dryRun (DryRun, DryRunOutcome), the dry run an approver reads before approving a run;
 * 1.6: EndpointType.onLoad; runs with nodes, for a type that runs on many hosts: EndpointType.selectNodes (the selection fixed when the run
 * is created), DetachedRun.nodes and nodeChanged, OutputSink.writeNode (node-tagged output, kept per node),
 * DetachedOutcome.reason `nodes_failed`; PluginApi.fleet, the server configuration's fleet section; registerRoute, a
 * read-only authenticated route of the plugin's own).
 */
export const PLUGIN_API = Object.freeze({ major: 1, minor: 6 });
export const PLUGIN_API_STRING = `${PLUGIN_API.major}.${PLUGIN_API.minor}`;

interface Accepted {
  major: number;
  minor: number;
}

const ALTERNATIVE = /^\^?(\d{1,4})(?:\.(\d{1,4}|x|\*))?(?:\.(\d{1,4}|x|\*))?$/;

/** The alternatives of a range, or undefined when it is not one we read. */
function parseRange(range: ApiRange): Accepted[] | undefined {
  if (typeof range === 'number') return Number.isInteger(range) && range >= 0 ? [{ major: range, minor: 0 }] : undefined;
  if (typeof range === 'object' && range !== null) {
    const { major, minor = 0 } = range;
    return Number.isInteger(major) && Number.isInteger(minor) && major >= 0 && minor >= 0 ? [{ major, minor }] : undefined;
  }
  if (typeof range !== 'string') return undefined;
  const alternatives: Accepted[] = [];
  for (const part of range.split('||').map((text) => text.trim())) {
    const match = ALTERNATIVE.exec(part);
    if (!match) return undefined;
    const minor = match[2] === undefined || match[2] === 'x' || match[2] === '*' ? 0 : Number(match[2]);
    alternatives.push({ major: Number(match[1]), minor });
  }
  return alternatives;
}

/** How a plugin's range reads in a message: as it wrote it. */
export function describeRange(range: unknown): string {
  if (typeof range === 'object' && range !== null) {
    const { major, minor } = range as { major?: unknown; minor?: unknown };
    return minor === undefined ? `{ major: ${String(major)} }` : `{ major: ${String(major)}, minor: ${String(minor)} }`;
  }
  return typeof range === 'string' ? range : String(range);
}

export type RangeVerdict = 'compatible' | 'incompatible' | 'unreadable';

/** Same major, and no minor newer than ours: a plugin built for 1.1 runs on 1.1 and 1.4, not on 1.0 or 2.0. */
export function checkApiRange(range: unknown): RangeVerdict {
  const alternatives = parseRange(range as ApiRange);
  if (!alternatives) return 'unreadable';
  const fits = alternatives.some(({ major, minor }) => major === PLUGIN_API.major && minor <= PLUGIN_API.minor);
  return fits ? 'compatible' : 'incompatible';
}
