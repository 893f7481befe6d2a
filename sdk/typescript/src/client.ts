// The Client: one resource object per part of the API, each with a method
// per endpoint.

import { Transport, timeString, type ClientOptions, type RequestOptions } from "./core.js";
import { PagePromise, type PageFetcher } from "./pagination.js";
import { MessageStream, type StreamResumer } from "./streaming.js";
import { EventStream, type EventLocator, type EventStreamOpener } from "./events-stream.js";
import type {
  EventType,
  Account,
  Action,
  APIKey,
  CreateAPIKeyParams,
  CreatedAPIKey,
  CreateOAuthClientParams,
  OAuthClient,
  OAuthClientWithSecret,
  UpdateAccountParams,
  Assistant,
  CalendarEvent,
  CalendarFeed,
  Conversation,
  CreateAssistantParams,
  CreateCalendarEventParams,
  CreateConversationParams,
  CreateIntegrationParams,
  CreateTaskParams,
  CreateWebhookParams,
  Delivery,
  Event,
  Integration,
  ListActionsParams,
  ListCalendarEventsParams,
  ListConversationsParams,
  ListDeliveriesParams,
  ListEventsParams,
  ListParams,
  ListResponse,
  ListTasksParams,
  ListTurnsParams,
  Message,
  RecoverWebhookParams,
  RunActionParams,
  SendMessageParams,
  Task,
  Turn,
  ToolOutput,
  Approval,
  RequiredAction,
  RequiredToolCall,
  RunTurnParams,
  UpdateAssistantParams,
  UpdateCalendarEventParams,
  UpdateConversationParams,
  UpdateMessageParams,
  UpdateTaskParams,
  UpdateWebhookParams,
  Webhook,
  WebhookRecovery,
  WebhookRedelivery,
} from "./types.js";
import { verifyWebhook, type VerifyOptions, type WebhookHeaders, type WebhookPayload } from "./webhook.js";

/** Escapes one path segment; refuses an empty id before any request. */
function seg(id: string, what = "id"): string {
  if (typeof id !== "string" || id === "") throw new TypeError(`ams: ${what} is empty`);
  return encodeURIComponent(id);
}

/** Copies a body, turning Date values into RFC 3339 strings. */
function body<T extends object>(params: T): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined) out[k] = timeString(v);
  }
  return out;
}

abstract class Resource {
  constructor(protected readonly t: Transport) {}

  protected async doGet<T>(path: string, query?: object, options?: RequestOptions): Promise<T> {
    return (await this.t.request<T>({ method: "GET", path, query: query as Record<string, unknown>, options })).data;
  }

  protected async doPost<T>(path: string, b: object | undefined, options?: RequestOptions): Promise<T> {
    return (await this.t.request<T>({ method: "POST", path, body: b === undefined ? undefined : body(b), options })).data;
  }

  protected async doPatch<T>(path: string, b: object, options?: RequestOptions): Promise<T> {
    return (await this.t.request<T>({ method: "PATCH", path, body: body(b), options })).data;
  }

  protected async doDelete(path: string, options?: RequestOptions): Promise<void> {
    await this.t.request<undefined>({ method: "DELETE", path, options });
  }

  /** A list; path is a function so that a bad id rejects on await (or iteration), like the other methods. */
  protected doList<T, P extends ListParams>(path: () => string, params: P | undefined, options?: RequestOptions): PagePromise<T> {
    const fetcher: PageFetcher<T> = async (p) => {
      const r = await this.t.request<ListResponse<T>>({ method: "GET", path: path(), query: p as Record<string, unknown>, options });
      return { data: r.data, requestId: r.requestId };
    };
    return new PagePromise<T>(fetcher, { ...(params ?? {}) });
  }
}

/** /v1/assistants: the account's assistants. */
export class Assistants extends Resource {
  /** Creates an assistant (permission write); `metadata` is stored with it. */
  async create(params: CreateAssistantParams, options?: RequestOptions): Promise<Assistant> {
    return this.doPost("/assistants", params, options);
  }
  /** The assistant with id. */
  async get(id: string, options?: RequestOptions): Promise<Assistant> {
    return this.doGet(`/assistants/${seg(id)}`, undefined, options);
  }
  /** Changes the fields params sets; `metadata` is merged into the assistant's. */
  async update(id: string, params: UpdateAssistantParams, options?: RequestOptions): Promise<Assistant> {
    return this.doPatch(`/assistants/${seg(id)}`, params, options);
  }
  /** Deletes the assistant; its conversations, tasks, calendar events and actions stay readable. */
  async delete(id: string, options?: RequestOptions): Promise<void> {
    return this.doDelete(`/assistants/${seg(id)}`, options);
  }
  /** The assistants: await for a page, `for await` for all. */
  list(params?: ListParams, options?: RequestOptions): PagePromise<Assistant> {
    return this.doList(() => "/assistants", params, options);
  }
}

/** /v1/messages: send (or stream) a message and get the reply; get, edit, delete messages. */
export class Messages extends Resource {
  /**
   * Sends a message to an assistant and returns its reply (direction
   * "outbound"); the reply's conversation_id names the conversation (new
   * unless params.conversation_id is set; conversations.create starts one
   * with a title and metadata). params.metadata is stored on the inbound
   * message (the reply has none). The request carries an Idempotency-Key
   * (options.idempotencyKey or a random one), so a retry never sends the
   * message twice.
   */
  async send(params: SendMessageParams, options?: RequestOptions): Promise<Message> {
    return this.doPost("/messages", params, options);
  }
  /**
   * Sends a message with "background": true: the server answers at once
   * (202) with the turn, queued or running, which runs on the server
   * (another process takes it over if its process dies). Follow it with
   * turns.get, turns.events, or the turn.* events.
   */
  async sendBackground(params: SendMessageParams, options?: RequestOptions): Promise<Turn> {
    return this.doPost("/messages", { ...params, background: true }, options);
  }
  /**
   * Sends a message and streams the turn's events: `turn.started`,
   * `tool_call`/`tool_result` for each tool call, `message.delta` events,
   * then `message.completed` with the stored reply. A dropped connection
   * resumes from the last event (see MessageStream).
   *
   * ```ts
   * for await (const ev of client.messages.stream({ assistant_id, message: "Hi" })) {
   *   if (ev.type === "message.delta") process.stdout.write(ev.delta);
   *   else if (ev.type === "message.completed") console.log("\nstored as", ev.message.id);
   * }
   * ```
   */
  stream(params: SendMessageParams, options?: RequestOptions): MessageStream {
    return new MessageStream(
      async () => {
        const r = await this.t.send({ method: "POST", path: "/messages", body: { ...params, stream: true }, options, stream: true });
        return { response: r.response, controller: r.controller };
      },
      resumer(this.t, options),
      options?.maxRetries ?? this.t.maxRetries,
    );
  }
  /**
   * Stops the running turn whose inbound message is id (turns.cancel for
   * it) and returns the turn.
   */
  async cancel(id: string, options?: RequestOptions): Promise<Turn> {
    return this.doPost(`/messages/${seg(id)}/cancel`, undefined, options);
  }
  /** The message with id. */
  async get(id: string, options?: RequestOptions): Promise<Message> {
    return this.doGet(`/messages/${seg(id)}`, undefined, options);
  }
  /**
   * Changes a message (emits message.updated): the content of an inbound
   * message (a reply's is InvalidRequestError message_not_editable), and
   * the metadata of any message, merged into its own. Set at least one.
   */
  async update(id: string, params: UpdateMessageParams, options?: RequestOptions): Promise<Message> {
    return this.doPatch(`/messages/${seg(id)}`, params, options);
  }
  /** Deletes a message (emits message.deleted). */
  async delete(id: string, options?: RequestOptions): Promise<void> {
    return this.doDelete(`/messages/${seg(id)}`, options);
  }
}

/** Opens GET /v1/turns/{id}/events after an event, for a MessageStream to resume. */
function resumer(t: Transport, options?: RequestOptions): StreamResumer {
  return async (turnId, lastEventId) => {
    const headers: Record<string, string> = { ...(options?.headers ?? {}) };
    if (lastEventId !== undefined) headers["Last-Event-ID"] = lastEventId;
    const r = await t.send({ method: "GET", path: `/turns/${seg(turnId)}/events`, options: { ...options, headers }, stream: true });
    return { response: r.response, controller: r.controller };
  };
}

/** /v1/turns: the record of each sent message's run, its stream, its cancel. */
export class Turns extends Resource {
  /** The turn with id: its status (running, completed, failed, cancelled), inbound message and reply. */
  async get(id: string, options?: RequestOptions): Promise<Turn> {
    return this.doGet(`/turns/${seg(id)}`, undefined, options);
  }
  /** The turns (of one conversation with params.conversation_id): await for a page, `for await` for all. */
  list(params?: ListTurnsParams, options?: RequestOptions): PagePromise<Turn> {
    return this.doList(() => "/turns", params, options);
  }
  /**
   * Stops a running turn: it comes back cancelled, or still running with
   * cancel_requested when another server process runs it. A turn that has
   * ended comes back unchanged.
   */
  async cancel(id: string, options?: RequestOptions): Promise<Turn> {
    return this.doPost(`/turns/${seg(id)}/cancel`, undefined, options);
  }
  /**
   * Answers every client tool call the turn waits for; returns the turn
   * once its resumed attempt ended or stopped again.
   */
  async submitToolOutputs(id: string, toolOutputs: ToolOutput[], options?: RequestOptions): Promise<Turn> {
    return this.doPost(`/turns/${seg(id)}/tool_outputs`, { tool_outputs: toolOutputs }, options);
  }
  /** Decides on every tool call the turn waits to have approved; returns the turn as submitToolOutputs. */
  async approveToolCalls(id: string, approvals: Approval[], options?: RequestOptions): Promise<Turn> {
    return this.doPost(`/turns/${seg(id)}/approvals`, { approvals }, options);
  }
  /**
   * Sends a message and runs its turn to the end: whenever it waits for
   * client tool outputs, onToolCall gives each call's output; calls that
   * wait for approval are decided by opts.approve (without it such a turn
   * is returned waiting). Returns the turn and its reply (null unless it
   * completed).
   *
   * ```ts
   * const { turn, reply } = await client.turns.run(
   *   { assistant_id, message: "Where is order 7?", tools: [{ type: "function", name: "lookup_order" }] },
   *   async (call) => JSON.stringify(await lookUp(call.arguments)),
   * );
   * ```
   */
  async run(
    params: RunTurnParams,
    onToolCall: (call: RequiredToolCall) => string | Promise<string>,
    opts?: { approve?: (call: RequiredToolCall) => boolean | [boolean, string] | Promise<boolean | [boolean, string]> },
    options?: RequestOptions,
  ): Promise<{ turn: Turn; reply: Message | null }> {
    const first = await this.doPost<Turn | Message>("/messages", params, options);
    if (first.object === "message") {
      const reply = first as Message;
      const page = await this.list({ conversation_id: reply.conversation_id, limit: 1 });
      return { turn: page.data[0] as Turn, reply };
    }
    let turn = first as Turn;
    while (turn.status === "requires_action" && turn.required_action) {
      const ra: RequiredAction = turn.required_action;
      if (ra.type === "submit_tool_outputs") {
        const outs: ToolOutput[] = [];
        for (const call of ra.tool_calls) outs.push({ tool_call_id: call.id, output: await onToolCall(call) });
        turn = await this.submitToolOutputs(turn.id, outs);
      } else if (ra.type === "approve_tool_calls" && opts?.approve) {
        const ds: Approval[] = [];
        for (const call of ra.tool_calls) {
          const d = await opts.approve(call);
          const [approved, reason] = Array.isArray(d) ? d : [d, ""];
          ds.push({ tool_call_id: call.id, approved, reason });
        }
        turn = await this.approveToolCalls(turn.id, ds);
      } else {
        break;
      }
    }
    const reply = turn.status === "completed" && turn.reply_message_id ? await this.doGet<Message>(`/messages/${seg(turn.reply_message_id)}`, undefined, options) : null;
    return { turn, reply };
  }
  /**
   * The turn's stream after the event lastEventId (from its start
   * without it), live while it runs, to its last event; a dropped
   * connection resumes like messages.stream's.
   */
  events(id: string, params?: { lastEventId?: string }, options?: RequestOptions): MessageStream {
    const resume = resumer(this.t, options);
    return new MessageStream(() => resume(id, params?.lastEventId), resume, options?.maxRetries ?? this.t.maxRetries, id, params?.lastEventId);
  }
}

/** /v1/conversations: threads of messages and their history. */
export class Conversations extends Resource {
  /**
   * Starts an empty conversation with an assistant (permission messages);
   * send messages into it with `messages.send({ conversation_id })`.
   */
  async create(params: CreateConversationParams, options?: RequestOptions): Promise<Conversation> {
    return this.doPost("/conversations", params, options);
  }
  /** Changes the fields params sets: the title, and metadata merged into the conversation's. */
  async update(id: string, params: UpdateConversationParams, options?: RequestOptions): Promise<Conversation> {
    return this.doPatch(`/conversations/${seg(id)}`, params, options);
  }
  /**
   * Deletes the conversation and its messages, emitting message.deleted for
   * each. The actions run in it stay, with its id in their conversation_id;
   * the tasks and calendar events they made stay too.
   */
  async delete(id: string, options?: RequestOptions): Promise<void> {
    return this.doDelete(`/conversations/${seg(id)}`, options);
  }
  /** The conversations, optionally of one assistant. */
  list(params?: ListConversationsParams, options?: RequestOptions): PagePromise<Conversation> {
    return this.doList(() => "/conversations", params, options);
  }
  /** The conversation with id. */
  async get(id: string, options?: RequestOptions): Promise<Conversation> {
    return this.doGet(`/conversations/${seg(id)}`, undefined, options);
  }
  /** A conversation's messages (newest first unless order "asc"). */
  listMessages(conversationId: string, params?: ListParams, options?: RequestOptions): PagePromise<Message> {
    return this.doList(() => `/conversations/${seg(conversationId, "conversationId")}/messages`, params, options);
  }
}

/** /v1/tasks: the to-do items assistants keep. */
export class Tasks extends Resource {
  async create(params: CreateTaskParams, options?: RequestOptions): Promise<Task> {
    return this.doPost("/tasks", params, options);
  }
  list(params?: ListTasksParams, options?: RequestOptions): PagePromise<Task> {
    return this.doList(() => "/tasks", params, options);
  }
  async get(id: string, options?: RequestOptions): Promise<Task> {
    return this.doGet(`/tasks/${seg(id)}`, undefined, options);
  }
  /** Changes the fields params sets; null clears due_at and remind_at; metadata is merged into the task's. */
  async update(id: string, params: UpdateTaskParams, options?: RequestOptions): Promise<Task> {
    return this.doPatch(`/tasks/${seg(id)}`, params, options);
  }
  /** Deletes the task (emits task.deleted with the task as it was). */
  async delete(id: string, options?: RequestOptions): Promise<void> {
    return this.doDelete(`/tasks/${seg(id)}`, options);
  }
  /** Marks the task completed (a completed task is returned unchanged). */
  async complete(id: string, options?: RequestOptions): Promise<Task> {
    return this.doPost(`/tasks/${seg(id)}/complete`, undefined, options);
  }
}

/** /v1/calendar/events: the user's calendar. */
export class CalendarEvents extends Resource {
  async create(params: CreateCalendarEventParams, options?: RequestOptions): Promise<CalendarEvent> {
    return this.doPost("/calendar/events", params, options);
  }
  /** The events; with starts_after and starts_before, those overlapping that window; with deleted: true, the deleted ones still restorable. */
  list(params?: ListCalendarEventsParams, options?: RequestOptions): PagePromise<CalendarEvent> {
    return this.doList(() => "/calendar/events", params, options);
  }
  async get(id: string, options?: RequestOptions): Promise<CalendarEvent> {
    return this.doGet(`/calendar/events/${seg(id)}`, undefined, options);
  }
  async update(id: string, params: UpdateCalendarEventParams, options?: RequestOptions): Promise<CalendarEvent> {
    return this.doPatch(`/calendar/events/${seg(id)}`, params, options);
  }
  /** Deletes the event (emits event.deleted with the event as it was); it can be restored for 30 days. */
  async delete(id: string, options?: RequestOptions): Promise<void> {
    return this.doDelete(`/calendar/events/${seg(id)}`, options);
  }
  /**
   * Brings back an event deleted through the API or by a calendar sync in
   * the last 30 days (emits event.restored). A live event is a
   * ConflictError with code "calendar_event_not_deleted".
   */
  async restore(id: string, options?: RequestOptions): Promise<CalendarEvent> {
    return this.doPost(`/calendar/events/${seg(id)}/restore`, undefined, options);
  }
}

/** /v1/calendar: events and the iCalendar feed. */
export class Calendar extends Resource {
  readonly events: CalendarEvents;
  constructor(t: Transport) {
    super(t);
    this.events = new CalendarEvents(t);
  }
  /**
   * Creates the account's calendar feed (an `ical_feed` integration) and
   * returns its secret URL, shown this once; a new feed replaces the old.
   */
  async createFeed(options?: RequestOptions): Promise<CalendarFeed> {
    return this.doPost("/calendar/feed", undefined, options);
  }
}

/** /v1/assistants/{id}/actions: run an assistant's tools directly. */
export class Actions extends Resource {
  /** Runs a tool and returns the action (status succeeded); bad input is an InvalidRequestError naming `input.<field>`. */
  async run(assistantId: string, params: RunActionParams, options?: RequestOptions): Promise<Action> {
    return this.doPost(`/assistants/${seg(assistantId, "assistantId")}/actions`, params, options);
  }
  /** The assistant's actions; with conversation_id, those run while answering in that conversation. */
  list(assistantId: string, params?: ListActionsParams, options?: RequestOptions): PagePromise<Action> {
    return this.doList(() => `/assistants/${seg(assistantId, "assistantId")}/actions`, params, options);
  }
  async get(assistantId: string, actionId: string, options?: RequestOptions): Promise<Action> {
    return this.doGet(`/assistants/${seg(assistantId, "assistantId")}/actions/${seg(actionId, "actionId")}`, undefined, options);
  }
}

/** /v1/integrations: connections to outside services (CalDAV). */
export class Integrations extends Resource {
  /** Connects an integration; the server checks the connection first (502 integration_unreachable). */
  async create(params: CreateIntegrationParams, options?: RequestOptions): Promise<Integration> {
    return this.doPost("/integrations", params, options);
  }
  list(params?: ListParams, options?: RequestOptions): PagePromise<Integration> {
    return this.doList(() => "/integrations", params, options);
  }
  async get(id: string, options?: RequestOptions): Promise<Integration> {
    return this.doGet(`/integrations/${seg(id)}`, undefined, options);
  }
  /** Disconnects the integration (it stays readable with status "disconnected"). */
  async delete(id: string, options?: RequestOptions): Promise<void> {
    return this.doDelete(`/integrations/${seg(id)}`, options);
  }
  /** Syncs now and returns the integration afterwards (a failed sync: status "error", last_error). */
  async sync(id: string, options?: RequestOptions): Promise<Integration> {
    return this.doPost(`/integrations/${seg(id)}/sync`, undefined, options);
  }
}

/** /v1/events: what happened in the last 30 days. */
export class Events extends Resource {
  /**
   * The events, optionally of one type and created strictly after
   * `created_after` and before `created_before`. The list only grows at
   * its end: following it with `order: "asc"` and `after` set to the last
   * id seen (polling again with that id when `has_more` is false) yields
   * every event exactly once, even one whose change committed late. An
   * event is listed once every change that began writing before it has
   * finished, which may be a moment after `get` or a webhook has it.
   */
  list(params?: ListEventsParams, options?: RequestOptions): PagePromise<Event> {
    return this.doList(() => "/events", params, options);
  }
  /** One event of the last 30 days (404 NotFoundError for an unknown id or another account's). */
  async get(id: string, options?: RequestOptions): Promise<Event> {
    return this.doGet(`/events/${seg(id)}`, undefined, options);
  }
  /**
   * Records a test event of `type` (POST /v1/events/trigger; permission
   * write): listed, streamed and delivered to the webhooks that subscribe
   * to its type like any event of that type: its `data` a made-up record
   * of the type, and `test: true`.
   */
  async trigger(type: EventType, options?: RequestOptions): Promise<Event> {
    return this.doPost("/events/trigger", { type }, options);
  }
  /**
   * The account's events live (GET /v1/events/stream), in the catch-up
   * order of `list({ order: "asc", after })`: after `lastEventId`, or
   * without it the events that come after the newest one listed when the
   * stream opens; of one `type` if given. A dropped connection resumes
   * after the last event yielded; see EventStream.
   */
  stream(params?: { type?: EventType; lastEventId?: string }, options?: RequestOptions): EventStream {
    const t = this.t;
    const open: EventStreamOpener = async (lastEventId) => {
      const headers: Record<string, string> = { ...(options?.headers ?? {}) };
      if (lastEventId !== undefined) headers["Last-Event-ID"] = lastEventId;
      const query = params?.type !== undefined ? { type: params.type } : undefined;
      // One attempt: EventStream retries a failed one itself, listing
      // first (without a cursor) the events emitted since, which a retry
      // of the same request would skip.
      const r = await t.send({ method: "GET", path: "/events/stream", query, options: { ...options, headers, maxRetries: 0 }, stream: true });
      return { response: r.response, controller: r.controller };
    };
    const locate: EventLocator = async (order) => {
      const page = await this.list({ ...(params?.type !== undefined ? { type: params.type } : {}), limit: 1, order }, options);
      return page.data[0];
    };
    return new EventStream(open, options?.maxRetries ?? t.maxRetries, params?.lastEventId, options?.signal, locate, t.maxRetryAfter);
  }
}

/** /v1/webhooks: endpoints that receive events, their deliveries, and verification. */
export class Webhooks extends Resource {
  async create(params: CreateWebhookParams, options?: RequestOptions): Promise<Webhook> {
    return this.doPost("/webhooks", params, options);
  }
  list(params?: ListParams, options?: RequestOptions): PagePromise<Webhook> {
    return this.doList(() => "/webhooks", params, options);
  }
  async get(id: string, options?: RequestOptions): Promise<Webhook> {
    return this.doGet(`/webhooks/${seg(id)}`, undefined, options);
  }
  /** Changes the fields params sets; `{ active: true }` turns a failing webhook back on; metadata is merged into the webhook's. */
  async update(id: string, params: UpdateWebhookParams, options?: RequestOptions): Promise<Webhook> {
    return this.doPatch(`/webhooks/${seg(id)}`, params, options);
  }
  async delete(id: string, options?: RequestOptions): Promise<void> {
    return this.doDelete(`/webhooks/${seg(id)}`, options);
  }
  /** Queues a webhook.ping event for this webhook only (which must be active); returns the event. */
  async ping(id: string, options?: RequestOptions): Promise<Event & { type: "webhook.ping" }> {
    return this.doPost(`/webhooks/${seg(id)}/ping`, undefined, options);
  }
  /** The webhook's delivery attempts, optionally of one event (event_id). */
  listDeliveries(id: string, params?: ListDeliveriesParams, options?: RequestOptions): PagePromise<Delivery> {
    return this.doList(() => `/webhooks/${seg(id)}/deliveries`, params, options);
  }
  /**
   * Queues the event of a delivery attempt for the webhook again (a new
   * delivery, attempt 1, same event id); its attempts are listed with
   * listDeliveries(id, { event_id }).
   */
  async redeliver(id: string, deliveryId: string, options?: RequestOptions): Promise<WebhookRedelivery> {
    return this.doPost(`/webhooks/${seg(id)}/deliveries/${seg(deliveryId, "deliveryId")}/redeliver`, undefined, options);
  }
  /**
   * Queues again every event the webhook missed: those still kept (30
   * days) created in [since, until) (until: now by default), of a type it
   * subscribes to, that it has not received and that are not already
   * pending for it, oldest first; `queued` says how many. The webhook must
   * be active (ConflictError webhook_inactive: `update(id, { active: true })`
   * first); asking twice queues only what is still missing.
   */
  async recover(id: string, params: RecoverWebhookParams, options?: RequestOptions): Promise<WebhookRecovery> {
    return this.doPost(`/webhooks/${seg(id)}/recover`, params, options);
  }
  /** Verifies a delivery; see verifyWebhook. */
  verify(payload: WebhookPayload, headers: WebhookHeaders, secret: string, opts?: VerifyOptions): Promise<Event> {
    return verifyWebhook(payload, headers, secret, opts);
  }
}

/** /v1/keys: the account's API keys (permission admin). */
export class Keys extends Resource {
  /**
   * Creates an API key; its `secret` is in this answer only (only a hash is
   * stored). The caller must hold each permission, and a caller that
   * expires cannot create a key that outlives it (PermissionDeniedError
   * permission_not_held or lifetime_not_held). Emits api_key.created.
   */
  async create(params: CreateAPIKeyParams, options?: RequestOptions): Promise<CreatedAPIKey> {
    return this.doPost("/keys", params, options);
  }
  /** The account's keys, revoked and expired ones included. */
  list(params?: ListParams, options?: RequestOptions): PagePromise<APIKey> {
    return this.doList(() => "/keys", params, options);
  }
  async get(id: string, options?: RequestOptions): Promise<APIKey> {
    return this.doGet(`/keys/${seg(id)}`, undefined, options);
  }
  /** Revokes the key: requests made with it are refused from now on; it stays listed as revoked. Emits api_key.revoked. */
  async revoke(id: string, options?: RequestOptions): Promise<APIKey> {
    return this.doPost(`/keys/${seg(id)}/revoke`, undefined, options);
  }
}

/** /v1/oauth/clients: the OAuth 2.0 clients the account registered (permission admin). */
export class OAuthClients extends Resource {
  /** Registers a client; a confidential one's `client_secret` is in this answer only. Emits oauth_client.created. */
  async create(params: CreateOAuthClientParams, options?: RequestOptions): Promise<OAuthClientWithSecret> {
    return this.doPost("/oauth/clients", params, options);
  }
  list(params?: ListParams, options?: RequestOptions): PagePromise<OAuthClient> {
    return this.doList(() => "/oauth/clients", params, options);
  }
  async get(id: string, options?: RequestOptions): Promise<OAuthClient> {
    return this.doGet(`/oauth/clients/${seg(id)}`, undefined, options);
  }
  /** A new secret for a confidential client, shown once; the old one stops working (a public client: ConflictError). */
  async rotateSecret(id: string, options?: RequestOptions): Promise<OAuthClientWithSecret> {
    return this.doPost(`/oauth/clients/${seg(id)}/rotate_secret`, undefined, options);
  }
  /** Deletes the client and every token it holds. Emits oauth_client.deleted. */
  async delete(id: string, options?: RequestOptions): Promise<void> {
    return this.doDelete(`/oauth/clients/${seg(id)}`, options);
  }
}

/** /v1/account: the account of the credential (permission admin). */
export class AccountResource extends Resource {
  async get(options?: RequestOptions): Promise<Account> {
    return this.doGet("/account", undefined, options);
  }
  /** Changes the settings given (a wrong time zone: InvalidRequestError). Emits account.updated when something changed. */
  async update(params: UpdateAccountParams, options?: RequestOptions): Promise<Account> {
    return this.doPatch("/account", params, options);
  }
}

/**
 * A client of the ams v1 API.
 *
 * ```ts
 * const client = new Client({ apiKey: process.env.AMS_API_KEY, baseURL: "http://127.0.0.1:8080" });
 * const reply = await client.messages.send({ assistant_id: "ast_…", message: "Hello!" });
 * ```
 *
 * Every non-2xx answer is thrown as an AmsError subclass. 429 and 5xx
 * answers (and connection failures of requests that are safe to repeat)
 * are retried with backoff, honouring Retry-After up to maxRetryAfter;
 * every POST carries an Idempotency-Key, the same on each retry.
 */
export class Client {
  readonly assistants: Assistants;
  readonly messages: Messages;
  readonly turns: Turns;
  readonly conversations: Conversations;
  readonly tasks: Tasks;
  readonly calendar: Calendar;
  readonly actions: Actions;
  readonly integrations: Integrations;
  readonly events: Events;
  readonly webhooks: Webhooks;
  /** The management API (permission admin). */
  readonly keys: Keys;
  readonly oauthClients: OAuthClients;
  readonly account: AccountResource;
  readonly #t: Transport;

  constructor(options: ClientOptions = {}) {
    const t = new Transport(options);
    this.#t = t;
    this.assistants = new Assistants(t);
    this.messages = new Messages(t);
    this.turns = new Turns(t);
    this.conversations = new Conversations(t);
    this.tasks = new Tasks(t);
    this.calendar = new Calendar(t);
    this.actions = new Actions(t);
    this.integrations = new Integrations(t);
    this.events = new Events(t);
    this.webhooks = new Webhooks(t);
    this.keys = new Keys(t);
    this.oauthClients = new OAuthClients(t);
    this.account = new AccountResource(t);
  }

  /** The server root the client talks to. */
  get baseURL(): string {
    return this.#t.baseURL;
  }

  /** The API's OpenAPI 3.1 document (GET /v1/openapi.json). */
  async openapi(options?: RequestOptions): Promise<Record<string, unknown>> {
    return (await this.#t.request<Record<string, unknown>>({ method: "GET", path: "/openapi.json", options })).data;
  }

  /**
   * Calls any endpoint, with the client's authentication, retries and
   * errors: the building block of the methods, and the way to call an
   * endpoint this version does not wrap. path is relative to /v1.
   */
  async request<T = unknown>(
    method: "GET" | "POST" | "PATCH" | "DELETE",
    path: string,
    init: { query?: Record<string, unknown>; body?: unknown; options?: RequestOptions } = {},
  ): Promise<{ data: T; status: number; headers: Headers; requestId: string | undefined }> {
    return this.#t.request<T>({ method, path, query: init.query, body: init.body === undefined ? undefined : timeBody(init.body), options: init.options });
  }
}

function timeBody(b: unknown): unknown {
  return b !== null && typeof b === "object" && !Array.isArray(b) ? body(b) : b;
}
