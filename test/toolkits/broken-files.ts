/**
 * Realistic broken toolkit files, as people break them while editing, and exactly what tkgate must say about
 * each: [line, column, key path, endpoint, message, hint]. `editor` says whether the JSON Schema (`tkgate
 * schema`) can see the mistake too ('rejects') or only `config check` can, against the live database or
 * between keys ('accepts'); syntax errors never reach a schema (undefined).
 */
export type Expected = [line: number, column: number, path: string, endpoint: string | null, message: string, hint: string | null];

export interface BrokenFile {
  file: string;
  text: string;
  problems: Expected[];
  editor?: 'rejects' | 'accepts';
}

/** A toolkit with one internal endpoint; `endpoint` replaces the endpoint's lines after `- path: ...`. */
export const kit = (
  name: string,
  endpoint = '    method: GET\n    type: internal\n    pseudo_querys:\n      - select: items\n        columns: [id, title]\n',
  top = '',
) => `name: ${name}\ntype: app\n${top}endpoints:\n  - path: items/search\n${endpoint}`;

export const BROKEN: BrokenFile[] = [];

const ep = (lines: string) => lines.replace(/^(?=.)/gm, '    ');
BROKEN.push(
  {
    file: 'metod.yaml',
    text: kit('metod', ep('metod: GET\ntype: internal\nhandler: echo\n')),
    problems: [
      [4, 5, 'endpoints.0.method', 'items/search', 'missing', 'GET (payload from the query string), POST (payload from the body), or both as a list.'],
      [5, 5, 'endpoints.0.metod', 'items/search', 'unknown key', 'did you mean method?'],
    ],
    editor: 'rejects',
  },
  {
    file: 'colums.yaml',
    text: kit('colums', ep('method: GET\ntype: internal\npseudo_querys:\n  - select: items\n    colums: [id]\n')),
    problems: [
      [8, 9, 'endpoints.0.pseudo_querys.0.columns', 'GET items/search', 'missing', 'The columns to return.'],
      [9, 9, 'endpoints.0.pseudo_querys.0.colums', 'GET items/search', 'unknown key', 'did you mean columns?'],
    ],
    editor: 'rejects',
  },
  {
    file: 'pseudo-queries.yaml',
    text: kit('pseudo-queries', ep('method: GET\ntype: internal\npseudo_queries:\n  - select: items\n    columns: [id]\n')),
    problems: [
      [7, 5, 'endpoints.0.pseudo_queries', 'GET items/search', 'unknown key', 'did you mean pseudo_querys?'],
      [4, 5, 'endpoints.0', 'GET items/search', 'an internal endpoint needs either pseudo_querys or handler (not both)', null],
    ],
    editor: 'rejects',
  },
  {
    file: 'method-typo.yaml',
    text: kit('method-typo', ep('method: GTE\ntype: internal\nhandler: echo\n')),
    problems: [
      [
        5,
        13,
        'endpoints.0.method',
        'GTE items/search',
        'must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS or a list (each one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS), not the string "GTE"',
        'did you mean GET?',
      ],
    ],
    editor: 'rejects',
  },
  {
    file: 'method-delete.yaml',
    text: kit('method-delete', ep('method: [GET, DELETE]\ntype: internal\nhandler: echo\n')),
    // The schema takes DELETE for an endpoint type that forwards the request itself; internal does not.
    problems: [[5, 19, 'endpoints.0.method.1', 'GET,DELETE items/search', 'DELETE is not a method this internal endpoint takes (GET, POST)', null]],
    editor: 'accepts',
  },
  {
    file: 'no-columns.yaml',
    text: kit('no-columns', ep('method: GET\ntype: internal\npseudo_querys:\n  - select: items\n')),
    problems: [[8, 9, 'endpoints.0.pseudo_querys.0.columns', 'GET items/search', 'missing', 'The columns to return.']],
    editor: 'rejects',
  },
  {
    file: 'type-typo.yaml',
    text: kit('type-typo', ep('method: GET\ntype: intenal\nhandler: echo\n')),
    problems: [
      [6, 11, 'endpoints.0.type', 'GET items/search', 'unknown endpoint type intenal (loaded: internal, http, exec, ssh, probe)', 'did you mean internal?'],
    ],
    editor: 'rejects',
  },
  {
    file: 'nmae.yaml',
    text: 'nmae: nmae\ntype: app\nendpoints:\n  - path: a\n    method: GET\n    type: internal\n    handler: echo\n',
    problems: [
      [1, 1, 'name', null, 'missing', "The toolkit's name, unique across all files: [a-z0-9][a-z0-9_-]*. The file name does not matter."],
      [1, 1, 'nmae', null, 'unknown key', 'did you mean name?'],
    ],
    editor: 'rejects',
  },
  {
    file: 'kind.yaml',
    text: 'name: kind\ntype: application\nendpoints:\n  - path: a\n    method: GET\n    type: internal\n    handler: echo\n',
    problems: [
      [
        2,
        7,
        'type',
        null,
        'must be one of app, lib, not the string "application"',
        'app or lib: the endpoints are served under {base}/tk/app/<name>/ or {base}/tk/lib/<name>/.',
      ],
    ],
    editor: 'rejects',
  },
  {
    file: 'enabled.yaml',
    text: kit('enabled', undefined, 'enabled: yes\n'),
    problems: [[3, 10, 'enabled', null, 'must be true or false, not the string "yes"', 'false: every endpoint answers 404 toolkit_not_found (default true).']],
    editor: 'rejects',
  },
  {
    file: 'empty-endpoints.yaml',
    text: 'name: empty-endpoints\ntype: app\nendpoints: []\n',
    problems: [[3, 12, 'endpoints', null, 'must not be empty', "The toolkit's endpoints; at least one."]],
    editor: 'rejects',
  },
  {
    file: 'no-endpoints.yaml',
    text: 'name: no-endpoints\ntype: app\ndescription: nothing yet\n',
    problems: [[1, 1, 'endpoints', null, 'missing', "The toolkit's endpoints; at least one."]],
    editor: 'rejects',
  },
  {
    file: 'indent.yaml',
    text: 'name: indent\ntype: app\nendpoints:\n  - path: a\n    method: GET\n   type: internal\n    handler: echo\n',
    problems: [
      [
        6,
        1,
        '',
        null,
        'not valid YAML: Sequence item without - indicator',
        'check the indentation: the keys of one mapping start in one column, list items with "- "',
      ],
    ],
  },
  {
    file: 'tabs.yaml',
    text: 'name: tabs\ntype: app\nendpoints:\n  - path: a\n\tmethod: GET\n',
    problems: [[5, 1, '', null, 'not valid YAML: Tabs are not allowed as indentation', 'indent with spaces, not tabs']],
  },
  {
    file: 'twice.yaml',
    text: 'name: twice\ntype: app\nendpoints:\n  - path: a\n    method: GET\n    type: internal\n    method: POST\n    handler: echo\n',
    problems: [[7, 5, '', null, 'not valid YAML: Map keys must be unique', 'a key appears twice in one mapping: keep one']],
  },
  {
    file: 'trailing-comma.json',
    text: '{\n  "name": "trailing-comma",\n  "type": "app",\n  "endpoints": [\n    { "path": "a", "method": "GET", "type": "internal", "handler": "echo", }\n  ]\n}\n',
    problems: [[5, 76, '', null, 'not valid JSON: expected a key in double quotes, found "}"', 'remove the comma before it: JSON allows no trailing comma']],
  },
  {
    file: 'no-comma.json',
    text: '{\n  "name": "no-comma",\n  "type": "app"\n  "endpoints": []\n}\n',
    problems: [[4, 3, '', null, 'not valid JSON: expected "," or "}" after a value, found a string', 'add a comma at the end of the line before']],
  },
  {
    file: 'unclosed.json',
    text: '{\n  "name": "unclosed",\n  "type": "app",\n  "endpoints": [\n',
    problems: [[5, 1, '', null, 'not valid JSON: expected a value, found the end of the file', 'close every [ and { that is open']],
  },
  {
    file: 'json-typo.json',
    text: '{\n  "name": "json-typo",\n  "type": "app",\n  "endpoints": [\n    { "path": "a", "methods": "GET", "type": "internal", "handler": "echo" }\n  ]\n}\n',
    problems: [
      [5, 5, 'endpoints.0.method', 'a', 'missing', 'GET (payload from the query string), POST (payload from the body), or both as a list.'],
      [5, 20, 'endpoints.0.methods', 'a', 'unknown key', 'did you mean method?'],
    ],
    editor: 'rejects',
  },
  {
    file: 'unknown-column.yaml',
    text: kit('unknown-column', ep('method: GET\ntype: internal\npseudo_querys:\n  - select: items\n    columns: [id, titel]\n')),
    problems: [[9, 23, 'endpoints.0.pseudo_querys.0.columns.1', 'GET items/search', 'column items.titel does not exist (did you mean title?)', null]],
    editor: 'accepts',
  },
  {
    file: 'unknown-table.yaml',
    text: kit('unknown-table', ep('method: GET\ntype: internal\nhandler: echo\ninject_db_context:\n  - profile.email\n')),
    problems: [[9, 9, 'endpoints.0.inject_db_context.0', 'GET items/search', 'table profile does not exist in the database (did you mean profiles?)', null]],
    editor: 'accepts',
  },
  {
    file: 'db-column.yaml',
    text: kit('db-column', ep('method: GET\ntype: internal\nhandler: echo\ninject_db_context:\n  - profiles.phone\n')),
    problems: [[9, 9, 'endpoints.0.inject_db_context.0', 'GET items/search', 'column profiles.phone does not exist', null]],
    editor: 'accepts',
  },
  {
    file: 'same-route.yaml',
    text:
      kit('same-route', ep('method: GET\ntype: internal\nhandler: echo\n')) +
      '  - path: items/search\n    method: [POST, GET]\n    type: internal\n    handler: echo\n',
    problems: [
      [
        8,
        11,
        'endpoints.1.path',
        'POST,GET items/search',
        'GET items/search is already defined by an earlier endpoint',
        'change the path or the method of one of them, or remove one',
      ],
    ],
    editor: 'accepts',
  },
  {
    file: 'required.yaml',
    text: kit('required', ep('method: POST\ntype: internal\nhandler: echo\nclient_filter:\n  allowed_fields: [q]\n  required_fields: [query]\n')),
    problems: [
      [
        10,
        25,
        'endpoints.0.client_filter.required_fields.0',
        'POST items/search',
        'query is required but not in allowed_fields, so it would always be stripped',
        null,
      ],
    ],
    editor: 'accepts',
  },
  {
    file: 'regex.yaml',
    text: kit(
      'regex',
      ep('method: GET\ntype: internal\nhandler: echo\nclient_filter:\n  field_rules:\n    q: { type: string, max_length: 20, pattern: "^[a-z+$" }\n'),
    ),
    problems: [
      [
        10,
        53,
        'endpoints.0.client_filter.field_rules.q.pattern',
        'GET items/search',
        'not a valid (RE2) regular expression: error parsing regexp: missing closing ]: `[a-z+$`',
        null,
      ],
    ],
    editor: 'accepts',
  },
  {
    file: 'rule-type.yaml',
    text: kit('rule-type', ep('method: GET\ntype: internal\nhandler: echo\nclient_filter:\n  field_rules:\n    q: { type: strng }\n')),
    problems: [
      [
        10,
        20,
        'endpoints.0.client_filter.field_rules.q.type',
        'GET items/search',
        'must be one of string, integer, number, boolean, object, array, not the string "strng"',
        'did you mean string?',
      ],
    ],
    editor: 'rejects',
  },
  {
    file: 'negative.yaml',
    text: kit('negative', ep('method: GET\ntype: internal\nhandler: echo\nclient_filter:\n  field_rules:\n    q: { type: string, max_length: -1 }\n')),
    problems: [
      [
        10,
        40,
        'endpoints.0.client_filter.field_rules.q.max_length',
        'GET items/search',
        'must be at least 0',
        'Strings: at most this many characters (code points). Arrays: at most this many items.',
      ],
    ],
    editor: 'rejects',
  },
  {
    file: 'handler.yaml',
    text: kit('handler', ep('method: GET\ntype: internal\nhandler: ecko\n')),
    problems: [
      [
        7,
        14,
        'endpoints.0.handler',
        'GET items/search',
        'no function named ecko is registered (registered: echo, sleep, late-signal, boom, leaky, teapot)',
        null,
      ],
    ],
    editor: 'accepts',
  },
  {
    file: 'wrapping.yaml',
    text: kit('wrapping', ep('method: GET\ntype: internal\nhandler: echo\noverwrite_wrapping: [email]\n')),
    problems: [
      [8, 26, 'endpoints.0.overwrite_wrapping.0', 'GET items/search', 'db_context has no key email to promote (inject_db_context gives: nothing)', null],
    ],
    editor: 'accepts',
  },
  {
    file: 'reference.yaml',
    text: kit('reference', ep('method: GET\ntype: internal\npseudo_querys:\n  - select: items\n    columns: [id]\n    where: { title: $request.title }\n')),
    problems: [
      [
        10,
        25,
        'endpoints.0.pseudo_querys.0.where.title',
        'GET items/search',
        '$request.title is not a reference: use $payload.<field>, $context.<field>, $db_context.<key> or $path.<name>',
        null,
      ],
    ],
    editor: 'accepts',
  },
  {
    file: 'slash.yaml',
    text: 'name: slash\ntype: app\nendpoints:\n  - path: /items/search\n    method: GET\n    type: internal\n    handler: echo\n',
    problems: [
      [
        4,
        11,
        'endpoints.0.path',
        'GET /items/search',
        'must be path segments like "items/search", "hosts/{host}/restart" or "files/*" (no leading or trailing slash)',
        null,
      ],
    ],
    editor: 'rejects',
  },
  {
    file: 'fields-string.yaml',
    text: kit('fields-string', ep('method: GET\ntype: internal\nhandler: echo\nclient_filter:\n  allowed_fields: q\n')),
    problems: [
      [
        9,
        23,
        'endpoints.0.client_filter.allowed_fields',
        'GET items/search',
        'must be a list (each a string), not the string "q"',
        'Only these fields reach the endpoint; others are stripped silently. Absent: every field passes.',
      ],
    ],
    editor: 'rejects',
  },
  {
    file: 'power.yaml',
    text: kit('power', ep('method: GET\ntype: internal\nhandler: echo\npermissions: { min_power: high }\n')),
    problems: [
      [
        8,
        31,
        'endpoints.0.permissions.min_power',
        'GET items/search',
        'must be a whole number, not the string "high"',
        'Callers below this power get 403 forbidden (default 0).',
      ],
    ],
    editor: 'rejects',
  },
  {
    file: 'limit.yaml',
    text: kit('limit', ep('method: GET\ntype: internal\npseudo_querys:\n  - select: items\n    columns: [id]\n    limit: 0\n')),
    problems: [
      [
        10,
        16,
        'endpoints.0.pseudo_querys.0.limit',
        'GET items/search',
        'must be at least 1',
        'At most this many rows (default 100, at most 10000), or { from, max, default }.',
      ],
    ],
    editor: 'rejects',
  },
  {
    // This pattern without max_length froze the server for 4 s on a 100 KB value.
    file: 'pattern-cost.yaml',
    text: kit(
      'pattern-cost',
      ep('method: POST\ntype: internal\nhandler: echo\nclient_filter:\n  field_rules:\n    q: { type: string, pattern: "^(?:[a-z]{1,1000}\\\\s?)*$" }\n'),
    ),
    problems: [
      [
        10,
        37,
        'endpoints.0.client_filter.field_rules.q.pattern',
        'POST items/search',
        'compiles to 2006 steps, too many to match values of up to 65536 characters without holding up the server',
        'set max_length to at most 498, or simplify the pattern (a counted repetition like {1,1000} is one step per count)',
      ],
    ],
    editor: 'accepts',
  },
  {
    file: 'not-a-toolkit.yaml',
    text: 'server:\n  port: 8080\nlog:\n  level: info\n',
    problems: [[1, 1, '', null, 'is not a toolkit file: it has none of the keys name, type and endpoints', null]],
    editor: 'rejects',
  },
  {
    file: 'list.yaml',
    text: '- name: list\n  type: app\n',
    problems: [
      [1, 1, '', null, 'must be a mapping (key: value), not a list', 'A toolkit: one file in toolkits.dir. Endpoint types: internal, http, exec, ssh, probe.'],
    ],
    editor: 'rejects',
  },
  {
    file: 'http-timeout.yaml',
    text: kit('http-timeout', ep('method: GET\ntype: http\nupstream:\n  url: http://127.0.0.1:9/\n  timout: 5s\n')),
    problems: [[9, 7, 'endpoints.0.upstream.timout', 'GET items/search', 'unknown key', 'did you mean timeout?']],
    editor: 'rejects',
  },
  {
    file: 'operator-swapped.yaml',
    text: kit('operator-swapped', ep('method: GET\ntype: internal\npseudo_querys:\n  - select: items\n    columns: [id]\n    where:\n      id: { "=>": 3 }\n')),
    problems: [[11, 17, 'endpoints.0.pseudo_querys.0.where.id.??', 'GET items/search', 'unknown key', 'did you mean >=?']],
    editor: 'rejects',
  },
  {
    file: 'operator-lik.yaml',
    text: kit(
      'operator-lik',
      ep('method: GET\ntype: internal\npseudo_querys:\n  - select: items\n    columns: [id]\n    where:\n      title:\n        lik: { prefix: $payload.q }\n'),
    ),
    problems: [[12, 13, 'endpoints.0.pseudo_querys.0.where.title.lik', 'GET items/search', 'unknown key', 'did you mean like?']],
    editor: 'rejects',
  },
  {
    file: 'order-default.yaml',
    text: kit(
      'order-default',
      ep(
        'method: GET\ntype: internal\npseudo_querys:\n  - select: items\n    columns: [id]\n    order_by: { from: $payload.sort, allowed: [id, title], default: status }\n',
      ),
    ),
    problems: [[10, 73, 'endpoints.0.pseudo_querys.0.order_by.default', 'GET items/search', 'status is not among allowed (id, title)', null]],
    editor: 'accepts',
  },
  {
    file: 'optional-literal.yaml',
    text: kit(
      'optional-literal',
      ep('method: GET\ntype: internal\npseudo_querys:\n  - select: items\n    columns: [id]\n    where:\n      status: { "=": open, optional: true }\n'),
    ),
    problems: [
      [
        11,
        42,
        'endpoints.0.pseudo_querys.0.where.status.optional',
        'GET items/search',
        'optional leaves the condition out when its $payload.<field> is absent: this one has none',
        null,
      ],
    ],
    editor: 'accepts',
  },
  {
    file: 'trigger-verify.yaml',
    text: kit('trigger-verify', ep('method: POST\ntype: internal\nhandler: echo\ntrigger:\n  verify: githib\n  secret: { secret: "env:PATH" }\n  as: bot\n')),
    problems: [
      [
        9,
        15,
        'endpoints.0.trigger.verify',
        'POST items/search',
        'must be one of github, gitlab, slack, stripe, standard-webhooks, hmac, not the string "githib"',
        'did you mean github?',
      ],
    ],
    editor: 'rejects',
  },
  {
    file: 'trigger-hmac.yaml',
    text: kit(
      'trigger-hmac',
      ep('method: GET\ntype: internal\nhandler: echo\ntrigger:\n  verify: hmac\n  secret: { secret: "env:PATH" }\n  as: bot\n  payload_map: { ref: ref }\n'),
    ),
    problems: [
      [9, 7, 'endpoints.0.trigger.hmac', 'GET items/search', 'verify: hmac needs trigger.hmac ({ header, algorithm, encoding, prefix })', null],
      [
        9,
        15,
        'endpoints.0.trigger.verify',
        'GET items/search',
        'a triggered endpoint takes POST only (providers send their events as POST bodies)',
        'set method: POST',
      ],
      [12, 27, 'endpoints.0.trigger.payload_map.ref', 'GET items/search', 'ref is not a JSON path: it starts with $ ($.a.b or $.a[0].b)', null],
    ],
    editor: 'accepts',
  },
);

/** The same valid toolkit in YAML and JSON: every editor check and config check accept it. */
export const VALID: Record<string, string> = {
  'fine.yaml': kit('fine'),
  'fine-json.json': JSON.stringify(
    { name: 'fine-json', type: 'app', endpoints: [{ path: 'a', method: ['GET', 'POST'], type: 'internal', handler: 'echo' }] },
    null,
    2,
  ),
};
