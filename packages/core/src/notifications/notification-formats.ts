import { Webhook } from 'standardwebhooks';

/** What a sink's format sends: the bytes and the headers beside the sink's own. */
export interface FormattedRequest {
  body: string;
  headers: Record<string, string>;
}

/**
 * `standard-webhooks`: the event's body as it is, signed as the Standard Webhooks specification says, by its
 * reference library (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>`). The id is
 * the delivery's, the same on every attempt; the timestamp is the attempt's (receivers refuse old ones).
 */
export function standardWebhook(secret: string, webhookId: string, body: string, now: Date): FormattedRequest {
  const signature = new Webhook(secret).sign(webhookId, now, body);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': webhookId,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signature,
    },
  };
}

const STATUS_WORDS: Record<string, string> = {
  'run.queued': 'queued',
  'run.awaiting_approval': 'is waiting for approval',
  'run.started': 'started',
  'run.succeeded': 'succeeded',
  'run.failed': 'failed',
  'run.cancelled': 'was cancelled',
  'run.rejected': 'was rejected',
  'run.expired': 'expired',
  'run.recovered': 'recovered',
};

/** Slack's mrkdwn escapes: &, < and > (https://api.slack.com/reference/surfaces/formatting#escaping). */
const slackEscape = (text: string): string => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

interface EventBody {
  type: string;
  data?: {
    run?: {
      id?: string;
      toolkit?: string;
      endpoint?: string;
      status?: string;
      reason?: string | null;
      exit_code?: number | null;
      actor?: { username?: string | null };
    };
    links?: { run?: string; console?: string };
    schedule?: { id?: string };
    reason?: string;
  };
}

/** `slack`: an incoming-webhook body, `{text, blocks}`: which run, its status, who, and a link. */
export function slackMessage(bodyText: string): FormattedRequest {
  const event = JSON.parse(bodyText) as EventBody;
  const run = event.data?.run;
  let text: string;
  if (run) {
    const what = `${run.toolkit}/${run.endpoint}`;
    const how = STATUS_WORDS[event.type] ?? event.type;
    const who = run.actor?.username ? ` (by ${run.actor.username})` : '';
    const ending = run.exit_code !== null && run.exit_code !== undefined ? `, exit ${run.exit_code}` : run.reason ? `, ${run.reason}` : '';
    text = `Run ${run.id} of ${what} ${how}${who}: ${run.status}${ending}`;
  } else text = `${event.type}${event.data?.schedule?.id ? ` ${event.data.schedule.id}` : ''}${event.data?.reason ? `: ${event.data.reason}` : ''}`;
  const link = event.data?.links?.console ?? event.data?.links?.run;
  const linked = link && /^https?:\/\//.test(link) ? `${slackEscape(text)} <${link}|open>` : slackEscape(text) + (link ? ` (${link})` : '');
  return {
    body: JSON.stringify({ text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text: linked } }] }),
    headers: { 'content-type': 'application/json' },
  };
}
