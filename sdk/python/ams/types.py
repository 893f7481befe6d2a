"""Typed records of the ams v1 API.

Every record is a dataclass built from the API's JSON with ``from_dict``:
fields the SDK does not know yet are kept in ``raw`` (the whole JSON object),
so a newer server never breaks an older SDK. Timestamps are the API's
RFC 3339 strings in UTC (``"2026-11-21T10:00:00.123Z"``); ``ams.parse_time``
turns one into an aware ``datetime``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Dict, Generic, List, Literal, Optional, Type, TypeVar, Union, cast

__all__ = [
    "Record",
    "Assistant",
    "Message",
    "Conversation",
    "Task",
    "CalendarEvent",
    "ActionError",
    "Action",
    "Integration",
    "IntegrationTool",
    "CalendarFeed",
    "Event",
    "Webhook",
    "WebhookSummary",
    "WebhookDelivery",
    "WebhookRedelivery",
    "WebhookRecovery",
    "Page",
    "StreamEvent",
    "TurnStartedEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "MessageDeltaEvent",
    "MessageCompletedEvent",
    "MessageStreamEvent",
    "OAuthToken",
    "AuthorizationRequest",
    "parse_time",
    "format_time",
]

R = TypeVar("R", bound="Record")
T = TypeVar("T")


def parse_time(value: Optional[str]) -> Optional[_dt.datetime]:
    """Parse an API timestamp (``2026-11-21T10:00:00.123Z``) into an aware
    ``datetime`` in UTC; ``None`` stays ``None``."""
    if value is None:
        return None
    s = value.strip()
    if s.endswith("Z") or s.endswith("z"):
        s = s[:-1] + "+00:00"
    # Python before 3.11 accepts only 3 or 6 fraction digits.
    if "." in s:
        head, rest = s.split(".", 1)
        i = 0
        while i < len(rest) and rest[i].isdigit():
            i += 1
        frac = (rest[:i] + "000000")[:6]
        s = head + "." + frac + rest[i:]
    return _dt.datetime.fromisoformat(s).astimezone(_dt.timezone.utc)


def format_time(value: "_dt.datetime | _dt.date | str") -> str:
    """Format a time for the API: RFC 3339. A string is sent unchanged; a
    naive ``datetime`` is taken as UTC; a ``date`` is midnight UTC."""
    if isinstance(value, str):
        return value
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        s = value.isoformat()
        return s[:-6] + "Z" if s.endswith("+00:00") else s
    if isinstance(value, _dt.date):
        return value.isoformat() + "T00:00:00Z"
    raise TypeError("expected a datetime, a date or an RFC 3339 string, got %r" % (value,))


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


class Record:
    """Base of the API's records. ``raw`` is the JSON object as received.

    Assistants, conversations, messages, tasks, calendar events and
    webhooks carry ``metadata``: your own key-value pairs (at most 50 keys
    of 1 to 40 characters, string values of at most 500 characters), which
    the server stores, returns on every read and puts in the record's
    events, but never reads."""

    raw: Dict[str, Any]

    @classmethod
    def from_dict(cls: Type[R], data: Dict[str, Any]) -> R:
        """Build the record from its JSON object; missing fields keep their
        defaults, unknown ones are only in ``raw``."""
        kwargs: Dict[str, Any] = {}
        for f in dataclasses.fields(cast(Any, cls)):  # Record subclasses are dataclasses
            if f.name == "raw" or f.name not in data:
                continue
            value = data[f.name]
            if f.name == "metadata":
                # Always a dict of strings: a copy, so that changing it
                # leaves raw as received.
                value = dict(value or {})
            kwargs[f.name] = cls._convert(f.name, value)
        return cls(raw=dict(data), **kwargs)  # type: ignore[call-arg]

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        return value

    def to_dict(self) -> Dict[str, Any]:
        """The record as the API sent it."""
        return dict(self.raw)


# Field defaults are None so that records can be built by hand in tests and
# from answers of older or newer servers alike; the API always fills the
# fields documented as required.


@dataclass
class Assistant(Record):
    """One of the account's AI assistants (``ast_...``)."""

    id: str = ""
    object: str = "assistant"
    name: str = ""
    description: str = ""
    instructions: str = ""
    model: str = ""
    #: Client function tools every turn has.
    tools: List[Dict[str, Any]] = field(default_factory=list)
    #: Tools whose calls wait for approval (``["*"]``: every tool).
    require_approval: List[str] = field(default_factory=list)
    #: ``"enqueue"``, ``"reject"`` or ``"interrupt"``.
    multitask_strategy: str = ""
    #: Your own key-value pairs (strings); ``{}`` when none.
    metadata: Dict[str, str] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class Message(Record):
    """One message of a conversation (``msg_...``). ``direction`` is
    ``"inbound"`` (sent by your program) or ``"outbound"`` (the assistant's)."""

    id: str = ""
    object: str = "message"
    assistant_id: str = ""
    conversation_id: str = ""
    direction: str = ""
    content: str = ""
    #: Your own key-value pairs (strings); ``{}`` when none.
    metadata: Dict[str, str] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class Conversation(Record):
    """A thread of messages with one assistant (``conv_...``)."""

    id: str = ""
    object: str = "conversation"
    assistant_id: str = ""
    title: str = ""
    message_count: int = 0
    last_message_at: str = ""
    #: Your own key-value pairs (strings); ``{}`` when none.
    metadata: Dict[str, str] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class Task(Record):
    """A task an assistant keeps (``task_...``); ``status`` is ``"open"`` or
    ``"completed"``."""

    id: str = ""
    object: str = "task"
    assistant_id: str = ""
    title: str = ""
    notes: str = ""
    status: str = ""
    due_at: Optional[str] = None
    remind_at: Optional[str] = None
    completed_at: Optional[str] = None
    #: Your own key-value pairs (strings); ``{}`` when none.
    metadata: Dict[str, str] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class CalendarEvent(Record):
    """A calendar event an assistant keeps (``cev_...``)."""

    id: str = ""
    object: str = "calendar_event"
    assistant_id: str = ""
    title: str = ""
    description: str = ""
    location: str = ""
    starts_at: str = ""
    ends_at: str = ""
    remind_at: Optional[str] = None
    #: Your own key-value pairs (strings); ``{}`` when none.
    metadata: Dict[str, str] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    #: When it was deleted; ``None`` for a live event. A deleted event
    #: (``list_calendar_events(deleted=True)``, ``event.deleted``) can be
    #: restored for 30 days.
    deleted_at: Optional[str] = None
    #: ``"api"`` or ``"sync"`` on a deleted event; ``None`` on a live one.
    deleted_by: Optional[str] = None
    raw: Dict[str, Any] = _raw()


@dataclass
class ActionError(Record):
    """Why an action run by an engine failed."""

    type: str = ""
    code: str = ""
    message: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class Action(Record):
    """A tool run of an assistant (``act_...``)."""

    id: str = ""
    object: str = "action"
    assistant_id: str = ""
    conversation_id: str = ""
    type: str = ""
    input: Any = None
    status: str = ""
    result: Optional[Dict[str, Any]] = None
    error: Optional[ActionError] = None
    #: The turn (``send_message``) whose engine ran the tool, ``""`` when
    #: run with ``run_action``; ``call_seq`` numbers the call in its turn.
    turn_id: str = ""
    call_seq: int = 0
    #: How long the tool ran, in milliseconds (for an MCP tool, the call
    #: to its server).
    duration_ms: int = 0
    created_at: str = ""
    raw: Dict[str, Any] = _raw()

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        if name == "error" and isinstance(value, dict):
            return ActionError.from_dict(value)
        return value


@dataclass
class Turn(Record):
    """The record of one ``send_message`` (``trn_...``): ``status`` is
    ``"running"``, ``"completed"`` (``reply_message_id`` names the reply),
    ``"failed"`` or ``"cancelled"`` (``error`` says why). A failed turn
    keeps what its tool calls did; a retry with the same idempotency key
    resumes it without running those calls again."""

    id: str = ""
    object: str = "turn"
    assistant_id: str = ""
    conversation_id: str = ""
    status: str = ""
    inbound_message_id: str = ""
    reply_message_id: str = ""
    error: Optional[ActionError] = None
    #: A cancel was asked of the server process running the turn, which
    #: has not acted on it yet.
    cancel_requested: bool = False
    #: Started with ``send_message_background``: it runs on the server.
    background: bool = False
    #: What its send did with the conversation's unfinished turns:
    #: ``"enqueue"``, ``"reject"`` or ``"interrupt"``.
    multitask_strategy: str = ""
    #: What a ``"requires_action"`` turn waits for (``submit_tool_outputs``
    #: or ``approve_tool_calls``); ``None`` otherwise.
    required_action: Optional["RequiredAction"] = None
    #: ``{"input_tokens", "output_tokens", "total_tokens"}``.
    usage: Dict[str, int] = field(default_factory=dict)
    #: ``"end_turn"``, ``"max_output_tokens"``, ``"requires_action"``,
    #: ``"cancelled"``, ``"interrupted"``, ``"error"``; ``""`` while it runs.
    stop_reason: str = ""
    action_ids: List[str] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    completed_at: Optional[str] = None
    raw: Dict[str, Any] = _raw()

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        if name == "error" and isinstance(value, dict):
            return ActionError.from_dict(value)
        if name == "required_action" and isinstance(value, dict):
            return RequiredAction.from_dict(value)
        return value


@dataclass
class RequiredToolCall(Record):
    """A tool call a turn waits to have answered: its ``id`` (answer by
    it), the tool's ``name`` and its ``arguments`` (a dict)."""

    id: str = ""
    name: str = ""
    arguments: Any = None
    raw: Dict[str, Any] = _raw()


@dataclass
class RequiredAction(Record):
    """What a ``"requires_action"`` turn waits for: ``type`` is
    ``"submit_tool_outputs"`` (answer with ``submit_tool_outputs``) or
    ``"approve_tool_calls"`` (answer with ``approve_tool_calls``), by
    ``expires_at``."""

    type: str = ""
    tool_calls: List[RequiredToolCall] = field(default_factory=list)
    expires_at: str = ""
    raw: Dict[str, Any] = _raw()

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        if name == "tool_calls" and isinstance(value, list):
            return [RequiredToolCall.from_dict(v) for v in value if isinstance(v, dict)]
        return value


@dataclass
class IntegrationTool(Record):
    """A tool of an MCP server: the assistants know it as
    ``<integration name>__<name>``; ``run_action`` checks input against
    ``input_schema``."""

    name: str = ""
    description: str = ""
    input_schema: Dict[str, Any] = field(default_factory=dict)
    raw: Dict[str, Any] = _raw()


@dataclass
class Integration(Record):
    """A connection to an outside service (``int_...``): ``caldav``, the
    ``ical_feed`` of ``create_calendar_feed``, or an ``mcp`` server
    (``create_mcp_integration``), whose ``name``, ``url``,
    ``allowed_tools``, ``require_approval`` and ``tools`` are set (``None``
    for the other providers)."""

    id: str = ""
    object: str = "integration"
    provider: str = ""
    status: str = ""
    config: Dict[str, Any] = field(default_factory=dict)
    last_error: Optional[str] = None
    name: Optional[str] = None
    url: Optional[str] = None
    allowed_tools: Optional[List[str]] = None
    require_approval: Optional[List[str]] = None
    tools: Optional[List[IntegrationTool]] = None
    connected_at: str = ""
    created_at: str = ""
    updated_at: str = ""
    raw: Dict[str, Any] = _raw()

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        if name == "config" and value is None:
            return {}
        if name == "tools" and isinstance(value, list):
            return [IntegrationTool.from_dict(t) for t in value if isinstance(t, dict)]
        return value


@dataclass
class CalendarFeed(Record):
    """The secret iCalendar feed URL of the account's calendar."""

    id: str = ""
    object: str = "calendar_feed"
    url: str = ""
    created_at: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class Event(Record):
    """Something that happened in the account (``evt_...``), as listed by
    ``list_events`` and delivered to webhooks. ``data`` depends on ``type``."""

    id: str = ""
    object: str = "event"
    type: str = ""
    created_at: str = ""
    #: The API request that made the change (``{"id", "idempotency_key"}``);
    #: None for a change made otherwise (pages, CLI, reminders, syncs).
    request: Optional[Dict[str, Any]] = None
    #: The turn (``trn_...``) whose messages or tool effects the event
    #: records; None otherwise.
    turn_id: Optional[str] = None
    #: On ``*.updated`` events, the values the change replaced; None
    #: otherwise.
    previous_attributes: Optional[Dict[str, Any]] = None
    #: True on a test event of ``trigger_event`` (``ams trigger``): its
    #: ``data`` is a made-up record of its type. False on real events.
    test: bool = False
    data: Dict[str, Any] = field(default_factory=dict)
    raw: Dict[str, Any] = _raw()

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        if name == "data" and value is None:
            return {}
        return value


@dataclass
class WebhookSummary(Record):
    """A webhook's delivery attempts of the last ``window_hours`` (24)."""

    window_hours: int = 24
    attempts: int = 0
    succeeded: int = 0
    #: ``succeeded / attempts`` (4 places); None without attempts.
    success_rate: Optional[float] = None
    #: The 95th percentile of the attempts' durations; None without attempts.
    p95_duration_ms: Optional[int] = None
    raw: Dict[str, Any] = _raw()


@dataclass
class Webhook(Record):
    """An endpoint that receives the account's events (``wh_...``)."""

    id: str = ""
    object: str = "webhook"
    url: str = ""
    events: List[str] = field(default_factory=list)
    active: bool = True
    status: str = ""
    #: While a replaced secret still signs beside the new one, until when
    #: (RFC 3339); ``None`` otherwise.
    previous_secret_expires_at: Optional[str] = None
    #: Your own key-value pairs (strings); ``{}`` when none.
    metadata: Dict[str, str] = field(default_factory=dict)
    #: One delivery at a time, in the order queued (the event log's,
    #: except between changes made at the same time); a failing event
    #: holds the ones behind it until it succeeds or is exhausted.
    ordered: bool = False
    #: Which events of its types it receives: ``assistant_id``,
    #: ``conversation_id`` and ``metadata.<key>``, each equal to the
    #: event's; ``{}``: all.
    filter: Dict[str, str] = field(default_factory=dict)
    #: ``"full"`` (the record) or ``"thin"`` (its ids only).
    payload: str = "full"
    #: The attempts of the last 24 hours; set by ``get_webhook`` only.
    summary: Optional[WebhookSummary] = None
    created_at: str = ""
    updated_at: str = ""
    raw: Dict[str, Any] = _raw()

    @classmethod
    def _convert(cls, name: str, value: Any) -> Any:
        if name == "events" and value is None:
            return []
        if name == "filter":
            return dict(value or {})
        if name == "summary" and value is not None:
            return WebhookSummary.from_dict(value)
        return value


@dataclass
class WebhookDelivery(Record):
    """One delivery attempt of an event to a webhook (``dlv_...``)."""

    id: str = ""
    object: str = "webhook_delivery"
    webhook_id: str = ""
    event_id: str = ""
    event_type: str = ""
    attempt: int = 0
    url: str = ""
    success: bool = False
    status_code: Optional[int] = None
    duration_ms: int = 0
    error: Optional[str] = None
    response_body: str = ""
    created_at: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class WebhookRedelivery(Record):
    """The answer of ``redeliver_webhook_delivery``: the event is queued."""

    object: str = "webhook_redelivery"
    webhook_id: str = ""
    event_id: str = ""
    delivery_id: str = ""
    status: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class WebhookRecovery(Record):
    """The answer of ``recover_webhook``: how many of the webhook's missed
    events created in [``since``, ``until``) were queued again."""

    object: str = "webhook_recovery"
    webhook_id: str = ""
    since: str = ""
    until: str = ""
    queued: int = 0
    raw: Dict[str, Any] = _raw()


@dataclass
class APIKey(Record):
    """An API key of the account (``key_...``), as the management API shows
    it: never the secret, which ``create_api_key`` returns once in
    ``secret``; ``prefix`` and ``last4`` are enough to recognise it."""

    id: str = ""
    object: str = "api_key"
    name: str = ""
    prefix: str = "ams_sk_"
    last4: str = ""
    permissions: List[str] = field(default_factory=list)
    #: ``active``, ``expired`` or ``revoked``.
    status: str = ""
    created_at: str = ""
    last_used_at: Optional[str] = None
    expires_at: Optional[str] = None
    revoked_at: Optional[str] = None
    #: The OAuth app (``cli_...``) whose access token made the key, directly
    #: or through a key it made; ``None`` for a key the account holder made.
    #: The key is revoked with that grant.
    oauth_client_id: Optional[str] = None
    #: The key itself, only in the answer of ``create_api_key``.
    secret: Optional[str] = None
    raw: Dict[str, Any] = _raw()


@dataclass
class OAuthClient(Record):
    """An OAuth 2.0 client the account registered (``cli_...``, its
    ``client_id``). ``client_secret`` is set only in the answers of
    ``create_oauth_client`` (confidential clients) and
    ``rotate_oauth_client_secret``: it is shown once."""

    id: str = ""
    object: str = "oauth_client"
    name: str = ""
    redirect_uris: List[str] = field(default_factory=list)
    public: bool = False
    created_at: str = ""
    updated_at: str = ""
    client_secret: Optional[str] = None
    raw: Dict[str, Any] = _raw()


@dataclass
class Account(Record):
    """The account of the credential (``usr_...``): plan and limits, time
    zone, and ``email_notifications`` (``key_reminders``,
    ``webhook_failing``: each ``True`` unless turned off)."""

    id: str = ""
    object: str = "account"
    email: str = ""
    plan: str = ""
    limits: Dict[str, int] = field(default_factory=dict)
    timezone: str = ""
    email_notifications: Dict[str, bool] = field(default_factory=dict)
    approved: bool = False
    created_at: str = ""
    updated_at: str = ""
    raw: Dict[str, Any] = _raw()


@dataclass
class Page(Generic[T]):
    """One page of a list. Pass ``last_id`` as ``after`` for the next page
    while ``has_more``; the ``iter_...`` methods do it for you."""

    data: List[T]
    has_more: bool
    first_id: Optional[str] = None
    last_id: Optional[str] = None

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


@dataclass
class StreamEvent:
    """One event of a streamed reply (or of ``follow_turn``). ``type`` is
    ``"turn.started"`` (the first; ``data`` has ``turn_id``,
    ``inbound_message_id``, ``conversation_id``, ``resumed``),
    ``"tool_call"`` (``data``: ``call_seq``, ``name``, ``arguments``),
    ``"tool_result"`` (``data``: ``call_seq``, ``name``, ``replayed``;
    ``action`` is the call's action), ``"message.delta"`` (``delta``, the
    next piece of text) or ``"message.completed"`` (``message``, the stored
    reply; the last event). ``id`` is the event's number in its turn's
    stream, from which a stream resumes; ``turn_id`` names the turn."""

    type: str
    delta: str = ""
    message: Optional[Message] = None
    id: str = ""
    turn_id: str = ""
    action: Optional[Action] = None
    data: Dict[str, Any] = field(default_factory=dict)


# The events a stream yields, one class each, so that a type checker
# narrows ``event`` on ``event.type``: after ``if event.type ==
# "message.completed":`` ``event.message`` is a ``Message``, not
# ``Optional[Message]``. Each is a StreamEvent.


class TurnStartedEvent(StreamEvent):
    """``turn.started``: ``data`` names the turn (``turn_id``,
    ``inbound_message_id``, ``conversation_id``, ``resumed``)."""

    type: Literal["turn.started"]


class ToolCallEvent(StreamEvent):
    """``tool_call``: ``data`` has ``call_seq``, ``name``, ``arguments``."""

    type: Literal["tool_call"]


class ToolResultEvent(StreamEvent):
    """``tool_result``: ``action`` is the call's action; ``data`` has
    ``call_seq``, ``name``, ``replayed``."""

    type: Literal["tool_result"]
    action: Action


class MessageDeltaEvent(StreamEvent):
    """``message.delta``: ``delta`` is the next piece of the reply's text."""

    type: Literal["message.delta"]


class MessageCompletedEvent(StreamEvent):
    """``message.completed``, the last event: ``message`` is the stored
    reply."""

    type: Literal["message.completed"]
    message: Message


#: What ``send_message_stream`` and ``follow_turn`` yield.
MessageStreamEvent = Union[TurnStartedEvent, ToolCallEvent, ToolResultEvent, MessageDeltaEvent, MessageCompletedEvent]


@dataclass
class OAuthToken:
    """The answer of ``POST /oauth/token``."""

    access_token: str
    token_type: str = "Bearer"
    expires_in: int = 0
    refresh_token: Optional[str] = None
    scope: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def scopes(self) -> List[str]:
        return self.scope.split()


@dataclass
class AuthorizationRequest:
    """An authorization URL to send the user to, and what the callback
    needs: check ``state`` and pass ``code_verifier`` to ``exchange_code``.
    Keep both server-side (in the user's session)."""

    url: str
    state: str
    code_verifier: str
    code_challenge: str
