// Records and parameters of the ams v1 API, as the JSON has them
// (snake_case). Times are RFC 3339 strings in UTC ("2026-11-21T10:00:00.123Z");
// parameters that take a time also take a Date.

/** A time parameter: an RFC 3339 string or a Date. */
export type TimeInput = string | Date;

/**
 * Your own key-value pairs on a record (assistants, conversations,
 * messages, tasks, calendar events, webhooks): at most 50 keys of 1 to 40
 * characters, string values of at most 500 characters. Returned on every
 * read (`{}` when none) and in the `data` of the record's events; the
 * server never reads it.
 */
export type Metadata = Record<string, string>;

/**
 * Metadata to merge into a record's on update: a string sets its key,
 * `null` (or `""`) removes it, keys not named stay. Breaking a limit is an
 * InvalidRequestError with `param` `metadata` or `metadata.<key>`, and
 * nothing is stored.
 */
export type MetadataUpdate = Record<string, string | null>;

/** One of an account's AI assistants. */
export interface Assistant {
  id: string; // "ast_…"
  object: "assistant";
  name: string;
  description: string;
  instructions: string;
  /** The engine: "builtin" is the server's embedded engine. */
  model: string;
  /** Client tools every turn has. */
  tools?: ClientTool[];
  /** Tools whose calls wait for approval (["*"]: all). */
  require_approval?: string[];
  multitask_strategy?: "enqueue" | "reject" | "interrupt";
  metadata: Metadata;
  created_at: string;
  updated_at: string;
}

/** A thread of messages between a program and one assistant. */
export interface Conversation {
  id: string; // "conv_…"
  object: "conversation";
  assistant_id: string;
  /**
   * Set by conversations.create / update (at most 200 characters); a
   * conversation started by messages.send takes the first line of its
   * first message (at most 80 characters). May be empty.
   */
  title: string;
  message_count: number;
  last_message_at: string;
  metadata: Metadata;
  created_at: string;
  updated_at: string;
}

/** "inbound": from the caller's program; "outbound": from the assistant. */
export type Direction = "inbound" | "outbound";

/** One message of a conversation. */
export interface Message {
  id: string; // "msg_…"
  object: "message";
  assistant_id: string;
  conversation_id: string;
  direction: Direction;
  content: string;
  metadata: Metadata;
  created_at: string;
  updated_at: string;
}

/** A task (a to-do item) an assistant keeps for the user. */
export interface Task {
  id: string; // "task_…"
  object: "task";
  assistant_id: string;
  title: string;
  notes: string;
  status: "open" | "completed";
  due_at: string | null;
  remind_at: string | null;
  completed_at: string | null;
  metadata: Metadata;
  created_at: string;
  updated_at: string;
}

/** An event in the user's calendar. */
export interface CalendarEvent {
  id: string; // "cev_…"
  object: "calendar_event";
  /** "" for an event that came from a calendar integration. */
  assistant_id: string;
  title: string;
  description: string;
  location: string;
  starts_at: string;
  ends_at: string;
  remind_at: string | null;
  metadata: Metadata;
  created_at: string;
  updated_at: string;
  /** When it was deleted; null for a live event. A deleted event can be restored for 30 days. */
  deleted_at: string | null;
  /** "api" or "sync" on a deleted event; null on a live one. */
  deleted_by: "api" | "sync" | null;
}

/** The tools an action may run. */
export type ToolName =
  | "create_task"
  | "update_task"
  | "complete_task"
  | "list_tasks"
  | "create_calendar_event"
  | "update_calendar_event"
  | "list_calendar_events";

/** Why an action failed, as the API would have answered. */
export interface ActionError {
  type: string;
  code: string;
  message: string;
  param?: string;
}

/** One run of an assistant's tool. */
export interface Action {
  id: string; // "act_…"
  object: "action";
  assistant_id: string;
  /** "" when run with actions.run. */
  conversation_id: string;
  type: ToolName | string;
  input: Record<string, unknown> | string;
  status: "succeeded" | "failed";
  /** The task or calendar event the tool left, or for the list tools a list, or for an MCP tool its MCP result ({content, structuredContent?, isError}); null unless succeeded (or an MCP tool answered isError). */
  result: Task | CalendarEvent | { object: "list"; data: Array<Task | CalendarEvent>; has_more: boolean } | Record<string, unknown> | null;
  error: ActionError | null;
  /** The turn (messages.send) whose engine ran the tool; "" when run with actions.run. */
  turn_id: string;
  /** The call's number in its turn, from 1; 0 when run with actions.run. */
  call_seq: number;
  /** How long the tool ran, in milliseconds (for an MCP tool, the call to its server). */
  duration_ms: number;
  created_at: string;
}

/**
 * The record of one messages.send (`trn_…`): its inbound message, the tool
 * calls of its engine (actions with its turn_id) and its reply. A failed
 * or cancelled turn keeps what its tool calls did; a retry with the same
 * idempotency key resumes a failed turn without running those calls again.
 */
export interface Turn {
  id: string; // "trn_…"
  object: "turn";
  assistant_id: string;
  conversation_id: string;
  status: "queued" | "running" | "requires_action" | "completed" | "failed" | "cancelled";
  inbound_message_id: string;
  /** The reply, once completed; "" before. */
  reply_message_id: string;
  /** Why a failed or cancelled turn ended (code "turn_cancelled" for a cancel); null otherwise. */
  error: ActionError | null;
  /** A cancel was asked of the server process running the turn, which has not acted on it yet. */
  cancel_requested: boolean;
  /** What a requires_action turn waits for; null otherwise. */
  required_action: RequiredAction | null;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  /** Started with messages.sendBackground: it runs on the server. */
  background: boolean;
  /** What its send did with the conversation's unfinished turns. */
  multitask_strategy: MultitaskStrategy;
  /** The tokens its engine calls took. */
  usage: Usage;
  /** Why it stopped ("" while queued or running). */
  stop_reason: "" | "end_turn" | "max_output_tokens" | "requires_action" | "cancelled" | "interrupted" | "error";
  /** The actions its tool calls recorded, in order. */
  action_ids: string[];
}

/**
 * What a turn in requires_action waits for: the outputs of its client
 * tool calls (submit_tool_outputs: turns.submitToolOutputs) or the
 * approval of tool calls (approve_tool_calls: turns.approveToolCalls).
 */
export interface RequiredAction {
  type: "submit_tool_outputs" | "approve_tool_calls";
  tool_calls: RequiredToolCall[];
  expires_at: string;
}

/** A tool call a turn waits to have answered. */
export interface RequiredToolCall {
  id: string; // "call_…"
  name: string;
  arguments: unknown;
}

/** A turn's tokens. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
}

/** A function tool the client runs itself. */
export interface ClientTool {
  type: "function";
  name: string;
  description?: string;
  /** A JSON Schema of "type": "object". */
  parameters?: Record<string, unknown>;
}

export type ToolChoice = "auto" | "none" | "required" | { type: "function"; name: string };

export interface ToolOutput {
  tool_call_id: string;
  output: string;
}

export interface Approval {
  tool_call_id: string;
  approved: boolean;
  reason?: string;
}

/** A message to send with per-turn options, for turns.run. */
export interface RunTurnParams extends SendMessageParams {
  tools?: ClientTool[];
  tool_choice?: ToolChoice;
  instructions?: string;
  max_output_tokens?: number;
  response_format?: { type: "text" } | { type: "json_schema"; json_schema: { name: string; schema: Record<string, unknown>; strict?: boolean } };
}
/** What a send does when its conversation has an unfinished turn: wait for it (enqueue, the default), refuse (409 conversation_busy), or cancel it. */
export type MultitaskStrategy = "enqueue" | "reject" | "interrupt";

export interface ListTurnsParams extends ListParams {
  /** Only the turns of this conversation. */
  conversation_id?: string;
}

/** A tool of an MCP server; the assistants know it as `<integration name>__<name>`. */
export interface IntegrationTool {
  name: string;
  description: string;
  /** The JSON Schema of its input: actions.run checks input against it. */
  input_schema: Record<string, unknown>;
}

/** A connection of the account to an outside service. */
export interface Integration {
  id: string; // "int_…"
  object: "integration";
  /** "caldav", "ical_feed" for the calendar feed, or "mcp" for an MCP server. */
  provider: string;
  status: "connected" | "error" | "disconnected";
  /** Provider settings, without secrets. */
  config: Record<string, unknown>;
  last_error: string | null;
  /** mcp: the integration's name, the prefix of its tools' names; null for the other providers. */
  name: string | null;
  /** mcp: the server's Streamable HTTP endpoint; null for the other providers. */
  url: string | null;
  /** mcp: the server's tools the assistants get (null: all). */
  allowed_tools: string[] | null;
  /** mcp: the tools whose calls in a turn wait for approval (["*"]: all); null for the other providers. */
  require_approval: string[] | null;
  /** mcp: the server's tools the assistants get, as listed at the last connect or sync; null for the other providers. */
  tools: IntegrationTool[] | null;
  connected_at: string;
  created_at: string;
  updated_at: string;
}

/** The account's calendar feed, as created: its URL is shown this once. */
export interface CalendarFeed {
  id: string; // "int_…"
  object: "calendar_feed";
  /** `<base URL>/calendar/feed/ams_cf_<token>.ics`: anyone with it can read the calendar. */
  url: string;
  created_at: string;
}

/**
 * The event types; "webhook.ping" is sent only by a ping. "webhook.failing",
 * "webhook.enabled", "task.deleted", "event.deleted" and "event.restored" are additions
 * beyond the interface's 13, sent only to webhooks that subscribe to them.
 */
export type EventType =
  | "message.created"
  | "message.updated"
  | "message.deleted"
  | "task.created"
  | "task.completed"
  | "task.updated"
  | "task.reminder"
  | "event.created"
  | "event.updated"
  | "event.reminder"
  | "integration.connected"
  | "integration.disconnected"
  | "integration.error"
  | "webhook.ping"
  | "webhook.failing"
  | "webhook.enabled"
  | "task.deleted"
  | "event.deleted"
  | "event.restored"
  | "api_key.created"
  | "api_key.revoked"
  | "oauth_client.created"
  | "oauth_client.secret_rotated"
  | "oauth_client.deleted"
  | "account.updated"
  | "assistant.created"
  | "assistant.updated"
  | "assistant.deleted"
  | "conversation.created"
  | "conversation.updated"
  | "conversation.deleted"
  | "turn.requires_action"
  | "turn.completed"
  | "turn.failed"
  | "turn.cancelled"
  | "webhook.degraded"
  | "webhook.recovered";

/**
 * What a webhook may subscribe to: every event type but "webhook.ping", or
 * "*" for all of them, including types added later (a list holding "*" is
 * stored and shown as ["*"]).
 */
export type WebhookEventType = Exclude<EventType, "webhook.ping"> | "*";

/** `data` of the message.* events. */
export interface MessageEventData {
  message_id: string;
  assistant_id: string;
  conversation_id: string;
  /** null once the message was deleted: its text is erased from every retained event. */
  content: string | null;
  direction: Direction;
  metadata: Metadata;
}

/** `data` of message.deleted: the deleted message's ids, never its text. */
export interface MessageDeletedEventData {
  message_id: string;
  assistant_id: string;
  conversation_id: string;
  direction: Direction;
}

/** The `data` of each event type. */
export interface EventDataMap {
  "message.created": MessageEventData;
  "message.updated": MessageEventData;
  "message.deleted": MessageDeletedEventData;
  "task.created": Task;
  "task.completed": Task;
  "task.updated": Task;
  "task.reminder": Task;
  "event.created": CalendarEvent;
  "event.updated": CalendarEvent;
  "event.reminder": CalendarEvent;
  "integration.connected": Integration;
  "integration.disconnected": Integration;
  "integration.error": Integration & { error: string };
  "webhook.ping": { webhook_id: string };
  "webhook.failing": { webhook_id: string; url: string; reason: string };
  "webhook.enabled": { webhook_id: string; url: string };
  /** The task as it was before its deletion. */
  "task.deleted": Task;
  /** The calendar event as it was before its deletion. */
  "event.deleted": CalendarEvent;
  /** The calendar event restored, live again. */
  "event.restored": CalendarEvent;
  /** Audit events of the management API: the record, never a secret. */
  "api_key.created": APIKey;
  "api_key.revoked": APIKey;
  "oauth_client.created": OAuthClient;
  "oauth_client.secret_rotated": OAuthClient;
  "oauth_client.deleted": OAuthClient;
  /** The account after the change, and the values it replaced. */
  "account.updated": Account & { previous_attributes: { timezone?: string; email_notifications?: Partial<EmailNotifications> } };
  "assistant.created": Assistant;
  "assistant.updated": Assistant;
  /** The assistant as it was before its deletion. */
  "assistant.deleted": Assistant;
  "conversation.created": Conversation;
  "conversation.updated": Conversation;
  /** The conversation as it was before its deletion. */
  "conversation.deleted": Conversation;
  /** The turn's lifecycle: data is the turn record. */
  "turn.requires_action": Turn;
  "turn.completed": Turn;
  "turn.failed": Turn;
  "turn.cancelled": Turn;
  /** Deliveries to a webhook failed 3 times in a row (it stays on): the last failed attempt. */
  "webhook.degraded": WebhookHealth;
  /** A delivery to a degraded webhook succeeded: that attempt, and how many had failed before it. */
  "webhook.recovered": WebhookHealth;
}

/** `data` of "webhook.degraded" and "webhook.recovered". */
export interface WebhookHealth {
  webhook_id: string;
  url: string;
  /** The attempt's HTTP status; null when no answer came. */
  status_code: number | null;
  /** Why the attempt failed; null for the success of "webhook.recovered". */
  error: string | null;
  /** The failed attempts in a row. */
  failed_attempts: number;
}

/**
 * Something that happened in the account, listed at GET /v1/events and
 * delivered to webhooks. Narrow on `type` to get the shape of `data`.
 */
export type Event = {
  [K in EventType]: {
    id: string; // "evt_…"
    object: "event";
    type: K;
    created_at: string;
    /** The API request that made the change; null for a change made otherwise (pages, CLI, reminders, syncs). */
    request: EventRequest | null;
    /** The turn ("trn_…") whose messages or tool effects the event records; null otherwise. */
    turn_id: string | null;
    /** On *.updated events: the values the change replaced. */
    previous_attributes?: Record<string, unknown>;
    /** true on a test event of `triggerEvent` (ams trigger): `data` is a made-up record of the type. Absent on real events. */
    test?: true;
    data: EventDataMap[K];
  };
}[EventType];

/** The API request that caused an event. */
export interface EventRequest {
  /** Its X-Request-Id ("req_…"). */
  id: string;
  /** The Idempotency-Key it was sent with; null without one. */
  idempotency_key: string | null;
}

/** A registered webhook endpoint (never its secret). */
export interface Webhook {
  id: string; // "wh_…"
  object: "webhook";
  url: string;
  events: WebhookEventType[];
  active: boolean;
  /** "failing" after a delivery's fifth failed attempt (or a 410); `active` is then false. */
  status: "active" | "failing";
  /** While a replaced secret still signs `webhook-signature` beside the new one, until when; null otherwise. */
  previous_secret_expires_at: string | null;
  metadata: Metadata;
  /** One delivery at a time, in the order queued (the event log's, except between changes made at the same time); a failing event holds the ones behind it until it succeeds or is exhausted. */
  ordered: boolean;
  /** Which events of its types it receives; {} for all. */
  filter: WebhookFilter;
  /** "full": the record; "thin": its ids only. */
  payload: WebhookPayload;
  /** Its attempts of the last 24 hours; set by getWebhook only (null in lists and in the answers of changes). */
  summary: WebhookSummary | null;
  created_at: string;
  updated_at: string;
}

/**
 * A webhook's filter: each field set must equal the event's
 * (`metadata.<key>`: the key of the event's record metadata).
 */
export type WebhookFilter = {
  assistant_id?: string;
  conversation_id?: string;
} & { [key: `metadata.${string}`]: string };

/** What a delivery's `data` holds. */
export type WebhookPayload = "full" | "thin";

/** A webhook's delivery attempts of the last `window_hours`. */
export interface WebhookSummary {
  window_hours: number;
  attempts: number;
  succeeded: number;
  /** succeeded / attempts (4 places); null without attempts. */
  success_rate: number | null;
  /** The 95th percentile of the attempts' durations; null without attempts. */
  p95_duration_ms: number | null;
}

/** One delivery attempt of an event to a webhook. */
export interface Delivery {
  id: string; // "dlv_…"
  object: "webhook_delivery";
  webhook_id: string;
  event_id: string;
  event_type: EventType;
  attempt: number;
  url: string;
  success: boolean;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  /** The first 1024 bytes of the receiver's answer. */
  response_body: string;
  created_at: string;
}

/** The answer of a redelivery: the event is queued for the webhook again. */
export interface WebhookRedelivery {
  object: "webhook_redelivery";
  webhook_id: string;
  /** The event queued again; its id is unchanged. */
  event_id: string;
  /** The attempt named in the request; the new attempts get new ids. */
  delivery_id: string;
  status: "queued";
}

/** The answer of a recovery: how many of the webhook's missed events were queued again. */
export interface WebhookRecovery {
  object: "webhook_recovery";
  webhook_id: string;
  /** Start of the range (included). */
  since: string;
  /** End of the range (excluded): the one asked for, or the time of the request. */
  until: string;
  /** How many events were queued for delivery to the webhook (0 when nothing is missing). */
  queued: number;
}

/** One page of a list endpoint, as the API answers it. */
export interface ListResponse<T> {
  object: "list";
  data: T[];
  /** Id of the first record of data; null when data is empty. */
  first_id: string | null;
  /** Id of the last record of data; null when data is empty. Pass it as `after` for the next page. */
  last_id: string | null;
  /** Whether more records follow (with `before`: precede) this page. */
  has_more: boolean;
}

/** Selects one page of a list. Set at most one of after and before. */
export interface ListParams {
  /** 1..100, default 20. */
  limit?: number;
  /** The page follows the record with this id, in the list's order. */
  after?: string;
  /** The page precedes the record with this id, in the list's order. */
  before?: string;
  /** "desc" (newest first, the default) or "asc". */
  order?: "desc" | "asc";
}

export interface SendMessageParams {
  /** The assistant to talk to. */
  assistant_id: string;
  /** The text: 1 to 32,768 bytes with at least one non-whitespace character. */
  message: string;
  /** Continues a conversation; omitted starts a new one. */
  conversation_id?: string;
  /** The inbound message's metadata (the reply has none). */
  metadata?: Metadata;
  /** What the send does when the conversation has an unfinished turn (default: the assistant's, else enqueue). */
  multitask_strategy?: MultitaskStrategy;
}

/** At least one of content and metadata. */
export interface UpdateMessageParams {
  /** The new text of an inbound message (a reply's text cannot change). */
  content?: string;
  /** Merged into the message's metadata; any message, replies included. */
  metadata?: MetadataUpdate;
}

export interface ListConversationsParams extends ListParams {
  assistant_id?: string;
}

export interface CreateConversationParams {
  /** The conversation's assistant. */
  assistant_id: string;
  /** At most 200 characters. */
  title?: string;
  metadata?: Metadata;
}

/** Fields to change; omitted fields are kept. */
export interface UpdateConversationParams {
  /** At most 200 characters; "" empties it. */
  title?: string;
  /** Merged into the conversation's metadata. */
  metadata?: MetadataUpdate;
}

export interface ListActionsParams extends ListParams {
  /** Only the actions run while answering in this conversation. */
  conversation_id?: string;
}

export interface CreateAssistantParams {
  name: string;
  description?: string | null;
  instructions?: string | null;
  /** Default "builtin". */
  model?: string | null;
  metadata?: Metadata;
}

export interface UpdateAssistantParams {
  name?: string;
  description?: string | null;
  instructions?: string | null;
  model?: string | null;
  /** Merged into the assistant's metadata. */
  metadata?: MetadataUpdate;
  tools?: ClientTool[] | null;
  require_approval?: string[] | null;
  multitask_strategy?: "enqueue" | "reject" | "interrupt" | null;
}

export interface CreateTaskParams {
  assistant_id: string;
  title: string;
  notes?: string | null;
  due_at?: TimeInput | null;
  /** Reminds once, with a task.reminder event. */
  remind_at?: TimeInput | null;
  metadata?: Metadata;
}

/** Fields to change; omitted fields are kept, null clears due_at and remind_at ("" clears notes). */
export interface UpdateTaskParams {
  title?: string;
  notes?: string | null;
  due_at?: TimeInput | null;
  remind_at?: TimeInput | null;
  /** Merged into the task's metadata. */
  metadata?: MetadataUpdate;
}

export interface ListTasksParams extends ListParams {
  assistant_id?: string;
  status?: "open" | "completed";
  /** Only tasks due at or after this time. */
  due_after?: TimeInput;
  /** Only tasks due before this time. */
  due_before?: TimeInput;
}

export interface CreateCalendarEventParams {
  assistant_id: string;
  title: string;
  starts_at: TimeInput;
  /** After starts_at; omitted means one hour after it. */
  ends_at?: TimeInput;
  description?: string | null;
  location?: string | null;
  /** Reminds once, with an event.reminder event. */
  remind_at?: TimeInput | null;
  metadata?: Metadata;
}

/** Fields to change; moving starts_at alone keeps the event's length. */
export interface UpdateCalendarEventParams {
  title?: string;
  description?: string | null;
  location?: string | null;
  starts_at?: TimeInput;
  ends_at?: TimeInput;
  remind_at?: TimeInput | null;
  /** Merged into the event's metadata. */
  metadata?: MetadataUpdate;
}

export interface ListCalendarEventsParams extends ListParams {
  assistant_id?: string;
  /** Only events that end after this time. */
  starts_after?: TimeInput;
  /** Only events that start before this time. */
  starts_before?: TimeInput;
  /** true: the deleted events still restorable instead of the live ones. */
  deleted?: boolean;
}

export interface RunActionParams {
  /** The tool to run: a built-in, or an MCP integration's `<name>__<tool>`. */
  type: ToolName | `${string}__${string}`;
  /** The tool's input, such as {title: "Call Bob", due_at: "2026-11-22T09:00:00Z"}. */
  input?: Record<string, unknown> | null;
}

export type CreateIntegrationParams = CreateCalDAVIntegrationParams | CreateMCPIntegrationParams;

export interface CreateCalDAVIntegrationParams {
  provider: "caldav";
  /** For caldav: url (the calendar collection) and username. */
  config: { url: string; username?: string };
  /** For caldav: password. Stored sealed; never returned. */
  secrets?: { password?: string };
}

/**
 * An MCP server (Streamable HTTP): ams connects (initialize, tools/list)
 * before answering, and its tools become the assistants' tools, named
 * `<name>__<tool>` (run one with actions.run).
 */
export interface CreateMCPIntegrationParams {
  provider: "mcp";
  /** ^[a-z0-9_-]{1,32}$, unique in the account. */
  name: string;
  /** The server's Streamable HTTP endpoint. */
  url: string;
  /** Sent with every request to the server (an Authorization); stored sealed, never returned. */
  headers?: Record<string, string>;
  /** The server's tools the assistants get (default: all). */
  allowed_tools?: string[];
  /** The tools whose calls in a turn wait for approval (["*"]: all). */
  require_approval?: string[];
}

export interface ListEventsParams extends ListParams {
  type?: EventType;
  /** Only events created strictly after this time. */
  created_after?: TimeInput;
  /** Only events created strictly before this time. */
  created_before?: TimeInput;
}

export interface ListDeliveriesParams extends ListParams {
  /** Only the attempts to deliver this event. */
  event_id?: string;
  /** Only the successful (true) or failed (false) attempts. */
  success?: boolean;
}

export interface CreateWebhookParams {
  /** https (any http or loopback URL on a server in dev mode). */
  url: string;
  events: WebhookEventType[];
  /** At least 16 characters; a `whsec_<base64>` secret also suits the Standard Webhooks libraries. */
  secret: string;
  /** Default true. */
  active?: boolean;
  metadata?: Metadata;
  /** Default false: see Webhook.ordered. */
  ordered?: boolean;
  /** Only the events whose fields equal these. */
  filter?: WebhookFilter;
  /** Default "full". */
  payload?: WebhookPayload;
}

export interface UpdateWebhookParams {
  url?: string;
  events?: WebhookEventType[];
  secret?: string;
  /** true turns a failing webhook back on. */
  active?: boolean;
  /** With `secret`: seconds the replaced secret keeps signing beside the new one (0 to 604800; default 86400). */
  previous_secret_expires_in?: number;
  /** Merged into the webhook's metadata. */
  metadata?: MetadataUpdate;
  /** Makes the webhook ordered (true) or not. */
  ordered?: boolean;
  /** Replaces the webhook's filter; null or {} removes it. */
  filter?: WebhookFilter | null;
  payload?: WebhookPayload;
}

export interface RecoverWebhookParams {
  /** Start of the range (included); not in the future. Events are kept 30 days. */
  since: TimeInput;
  /** End of the range (excluded), after `since`. Default: now. */
  until?: TimeInput;
  /** Also queue the events from before the webhook was created; without it `since` is clamped to the webhook's creation. */
  include_earlier?: boolean;
}

/** A piece of a streamed reply. */
/** What every event of a turn's stream carries. */
export interface TurnEventBase {
  /** The event's number in its turn's stream: a stream resumes after it (Last-Event-ID). */
  id?: string;
  /** The turn. */
  turn_id?: string;
}

/** The first event of a turn's stream (and of each resumed attempt). */
export interface TurnStartedEvent extends TurnEventBase {
  type: "turn.started";
  turn: { turn_id: string; inbound_message_id: string; conversation_id: string; assistant_id: string; resumed: boolean };
}

/** A tool call of the engine. */
export interface ToolCallEvent extends TurnEventBase {
  type: "tool_call";
  call: { turn_id: string; call_seq: number; name: string; arguments: unknown };
}

/** The action of a tool call; replayed when a resumed turn found it committed and did not run it again. */
export interface ToolResultEvent extends TurnEventBase {
  type: "tool_result";
  result: { turn_id: string; call_seq: number; name: string; action: Action; replayed: boolean };
}

export interface MessageDeltaEvent extends TurnEventBase {
  type: "message.delta";
  /** The next piece of the reply's text; the deltas put together are its content. */
  delta: string;
}

/** The last event of a streamed reply: the stored reply. */
export interface MessageCompletedEvent extends TurnEventBase {
  type: "message.completed";
  message: Message;
}

/** An event of a streamed reply. */
export type MessageStreamEvent = TurnStartedEvent | ToolCallEvent | ToolResultEvent | MessageDeltaEvent | MessageCompletedEvent;

/** A permission of an API key: admin grants every other. */
export type Permission = "read" | "write" | "admin" | "messages" | "integrations";

/**
 * An API key of the account (never its secret, which create returns
 * once); prefix and last4 are enough to recognise it.
 */
export interface APIKey {
  id: string; // "key_…"
  object: "api_key";
  name: string;
  prefix: "ams_sk_";
  last4: string;
  permissions: Permission[];
  status: "active" | "expired" | "revoked";
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  /**
   * The OAuth app ("cli_…") whose access token made the key, directly or
   * through a key it made; null for a key the account holder made. The
   * key is revoked with that grant.
   */
  oauth_client_id: string | null;
}

/** A new API key with its secret, shown this once. */
export interface CreatedAPIKey extends APIKey {
  secret: string;
}

/** POST /v1/keys. */
export interface CreateAPIKeyParams {
  name: string;
  /** The caller must hold each (admin holds all): else 403 permission_not_held. */
  permissions: Permission[];
  /** Absent: never. A caller that expires must give one no later than its own expiry (403 lifetime_not_held). */
  expires_at?: TimeInput;
}

/** An OAuth 2.0 client the account registered (never its secret). */
export interface OAuthClient {
  id: string; // "cli_…", the client_id
  object: "oauth_client";
  name: string;
  redirect_uris: string[];
  /** A public client has no secret and must use PKCE. */
  public: boolean;
  created_at: string;
  updated_at: string;
}

/** A client with its secret, shown this once (null for a public client). */
export interface OAuthClientWithSecret extends OAuthClient {
  client_secret: string | null;
}

/** POST /v1/oauth/clients. */
export interface CreateOAuthClientParams {
  name: string;
  redirect_uris: string[];
  public?: boolean;
}

/** The e-mails the account receives, each on unless turned off. */
export interface EmailNotifications {
  /** 14 days before an API key expires or turns 90 days old. */
  key_reminders: boolean;
  /** When a webhook is marked failing. */
  webhook_failing: boolean;
}

/** The account of the credential. */
export interface Account {
  id: string; // "usr_…"
  object: "account";
  email: string;
  plan: "standard" | "professional" | "enterprise";
  limits: { requests_per_minute: number; requests_per_day: number };
  timezone: string;
  email_notifications: EmailNotifications;
  /** false while the account is on the early-access waitlist. */
  approved: boolean;
  created_at: string;
  updated_at: string;
}

/** PATCH /v1/account: the settings to change. */
export interface UpdateAccountParams {
  /** An IANA time zone name such as "Europe/Paris". */
  timezone?: string;
  email_notifications?: Partial<EmailNotifications>;
}
