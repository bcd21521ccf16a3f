import { echoEndpoint, type ToolkitDoc } from '../support/toolkit-files.js';

/** The toolkits most pipeline tests run against. */
export const shop: ToolkitDoc = {
  name: 'shop',
  type: 'app',
  default_group: 'customer',
  endpoints: [
    echoEndpoint(),
    { path: 'admin/echo', method: 'GET', type: 'internal', handler: 'echo', permissions: { min_power: 50 } },
    {
      path: 'context',
      method: 'GET',
      type: 'internal',
      handler: 'echo',
      client_filter: { allowed_fields: ['status'] },
      inject_db_context: ['profiles.email', 'users.username as login', 'orders.total?status=$payload.status', 'profiles.city as town'],
      overwrite_wrapping: ['-power', 'email'],
    },
    { path: 'boom', method: 'GET', type: 'internal', handler: 'boom' },
    { path: 'teapot', method: 'GET', type: 'internal', handler: 'teapot' },
    { path: 'slow', method: 'GET', type: 'internal', handler: 'sleep' },
    { path: 'late-signal', method: 'GET', type: 'internal', handler: 'late-signal' },
    { path: 'doomed', method: 'GET', type: 'internal', handler: 'echo', inject_db_context: ['doomed.value'] },
    {
      path: 'guarded',
      method: 'POST',
      type: 'internal',
      handler: 'echo',
      permissions: { min_power: 50 },
      client_filter: { required_fields: ['q'], max_body_bytes: 64 },
    },
  ],
};

export const disabled: ToolkitDoc = { name: 'off', type: 'app', enabled: false, endpoints: [echoEndpoint()] };
export const library: ToolkitDoc = { name: 'library', type: 'lib', endpoints: [echoEndpoint()] };
