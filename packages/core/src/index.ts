/** @tkgate/core: the public surface used by the tkgate CLI and by plugins. */
export { loadServerConfig, ConfigError, DEFAULT_PLUGINS, configurationReference, type ConfigurationEntry } from './config/server-config.js';
export type { ServerConfig, LoadConfigOptions } from './config/server-config.js';
export { withdrawConfigEnvironment } from './config/withdraw-environment.js';
export { parseDuration } from './config/duration.js';
export { fleetSettingsOf, type FleetSettings } from './config/fleet-settings.js';
export { createLogger } from './log.js';
export type { Logger, LogLevel, LogFields } from './log.js';
export {
  GatewayError,
  invalidPayload,
  payloadTooLarge,
  unauthorized,
  forbidden,
  notFound,
  methodNotAllowed,
  rateLimited,
  internalError,
  unavailable,
  asGatewayError,
} from './errors.js';
export type { FieldProblem, GatewayErrorOptions, GatewayErrorShape } from './errors.js';
export { CORE_ERROR_CODES } from './error-codes.js';
export type { ErrorCodeDeclaration, CoreErrorCode } from './error-codes.js';
export { openDatabase } from './db/connect.js';
export { keepSqliteOwner } from './db/sqlite-owner.js';
export { insertReturningId } from './db/inserted-id.js';
export { databaseSystemName } from './tracing/database-span.js';
export { whereExactly, whereCompared, whereInExactly, type Comparison } from './db/exact-match.js';
export { textSearch, type TextSearch, type SearchMode } from './db/text-search.js';
export { orderExactly } from './db/ordering.js';
export type { Database, QueryBuilder } from './db/connect.js';
export { migrateToLatest, type MigrationState, type PlannedMigration } from './db/migrate.js';
export { migrateWithPlugins, migrationPlan, migrationStatus } from './plugins/plugin-migrations.js';
export { startGateway, StartCancelled, describeDatabase } from './gateway.js';
export type { RunningGateway, GatewayOptions } from './gateway.js';
export { clusterSource, answerPrimaryScrapes } from './ops/cluster-metrics.js';
export { serveMetrics } from './ops/metrics-server.js';
export type { MetricsSource, MetricsListener } from './ops/metrics-server.js';
export type { PluginMetrics } from './plugins/plugin-api.js';
export { addUser, setPassword, setDisabled, setPower, setCoreGroup, listUsers, revokeSessions } from './admin/user-admin.js';
export type { NewUser, UserListing } from './admin/user-admin.js';
export { addGroup, associate, override } from './admin/group-admin.js';
export { userIdOf } from './admin/lookups.js';
export { createApiKey, revokeApiKey, listApiKeys } from './api-keys/api-key-admin.js';
export type { CreatedApiKey, RevokedApiKey, ApiKeyListing } from './api-keys/api-key-admin.js';
export { checkApiKeyRequest } from './api-keys/api-key-request.js';
export type { ApiKeyAsked, ApiKeyRequest } from './api-keys/api-key-request.js';

// The plugin API (docs/plugins.md): the same surface the built-in endpoint types use.
// A plugin states its API range as a literal of its own (docs/plugins.md, "Compatibility"); the host's
// version is not exported, so that no plugin can claim whatever version its host happens to have.
export { StreamedResponse, reply, UPGRADED } from './plugins/plugin-api.js';
export type {
  ApiRange,
  PluginMigrations,
  PluginMigration,
  ReplyOptions,
  EnvelopedReply,
  TkgatePlugin,
  PluginApi,
  EndpointType,
  EndpointCall,
  DetachedPlan,
  DetachedRun,
  DetachedOutcome,
  DryRun,
  DryRunOutcome,
  OutputSink,
  EndpointIdentity,
  IncomingRequest,
  CheckEnvironment,
  WarnEnvironment,
  ConfigIssue,
  RequestContext,
  NamedFunction,
  FunctionCall,
  PreparedRead,
  PayloadFields,
  BodyWriter,
  MiddlewarePoint,
  PluginMiddleware,
  TraceContext,
  ChildSpan,
  SpanOptions,
  SpanAttributes,
  PluginSecrets,
  PluginRoute,
  PluginRouteCall,
  NodeSelectionCall,
  RunNodeState,
  RunNodeStatus,
} from './plugins/plugin-api.js';
export { MIDDLEWARE_POINTS } from './plugins/plugin-middleware.js';
export type { ResponseDescription, JsonSchema } from './plugins/response-description.js';
export { DatabaseSchema, unreadable, CORE_TABLES } from './db/database-schema.js';
export { NOT_CONVERTIBLE } from './db/column-types.js';
export type { ColumnType, ColumnKind } from './db/column-types.js';
export { jsonDepthExceeds } from './json/json-limits.js';
export { RunStore } from './runs/run-store.js';
export { offlineRunCommands } from './runs/offline-commands.js';
export { OPERATOR as RUN_OPERATOR, rerunAsked, type RerunAsked } from './runs/run-commands.js';
export { commentProblem } from './runs/approvals/approval-deciders.js';
export { ScheduleStore } from './schedules/schedule-store.js';
export {
  fireCursor,
  FIRES_DEFAULT_LIMIT,
  listSchedules,
  PREVIEW_MAX,
  previewSchedule,
  scheduleEntries,
  scheduleFires,
  setSchedulePaused,
  type ScheduleData,
  type ScheduleEntry,
} from './schedules/schedule-commands.js';
export { listDeliveries, redeliver } from './notifications/notification-commands.js';
export { DELIVERY_STATUSES } from './notifications/notification-store.js';
export type { DeliveryListing } from './notifications/notification-store.js';
export type { OutputChunk } from './runs/run-store.js';
export { runData, ALL_STATUSES as RUN_STATUSES, ENDED_STATUSES as ENDED_RUN_STATUSES } from './runs/run-record.js';
export type { RunRow, RunStatus } from './runs/run-record.js';
export { jsonText, isJsonText } from './json/json-text.js';
export type { JsonText, JsonTextProblem } from './json/json-text.js';
/** zod, for plugin config schemas (any Standard Schema library works too). */
export { z } from 'zod';
export { durationMs } from './plugins/config-schemas.js';
export { secretReference, secretOr, isSecretReference, type SecretReference } from './secrets/secret-reference.js';
export { SecretMask, SecretStreamMask, MASK } from './secrets/secret-mask.js';
export type { SecretScheme, SecretSource, SecretPlace } from './secrets/secret-schemes.js';
export { AdmissionGate, EndpointGates } from './plugins/admission-gate.js';
export { checkToolkitDirectory, withLoadedPlugins, withLoadedToolkits } from './toolkits/check-directory.js';
export { toolkitFileJsonSchema } from './toolkits/toolkit-json-schema.js';
export { openApiDocument } from './openapi/openapi-document.js';
export { describeProblem, problemFields, type ToolkitProblem } from './toolkits/config-issues.js';
export { nearest } from './suggest.js';
export { serve } from './cluster/serve.js';
export type { Serving } from './cluster/serve.js';
export { backupSqlite } from './db/backup.js';
export { recordCliChange } from './audit/cli-changes.js';
export { parseAuditFilters, queryAuditEvents, DEFAULT_LIMIT as AUDIT_DEFAULT_LIMIT, type AuditFilters, type AuditListing } from './audit/audit-query.js';
