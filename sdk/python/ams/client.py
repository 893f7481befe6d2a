"""The client of the ams v1 API."""

from __future__ import annotations

import datetime as _dt
import http.client
import json
import os
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

from . import __version__
from ._http import Transport, backoff, new_idempotency_key, seg
from .errors import AmsError, APIConnectionError, error_from_response
from .types import (
    Account,
    Action,
    APIKey,
    Assistant,
    CalendarEvent,
    CalendarFeed,
    Conversation,
    Event,
    Integration,
    Message,
    OAuthClient,
    Page,
    Record,
    MessageCompletedEvent,
    MessageDeltaEvent,
    MessageStreamEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnStartedEvent,
    Task,
    Turn,
    Webhook,
    WebhookDelivery,
    WebhookRecovery,
    WebhookRedelivery,
    format_time,
    RequiredToolCall,
)

__all__ = ["Client", "UNSET", "Metadata", "MetadataUpdate", "DEFAULT_BASE_URL", "DEFAULT_TIMEOUT", "DEFAULT_MAX_RETRIES"]

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3

R = TypeVar("R", bound=Record)
Time = Union[_dt.datetime, _dt.date, str]
#: Metadata to store on a new record: your own key-value pairs (at most 50
#: keys of 1 to 40 characters, string values of at most 500 characters).
Metadata = Mapping[str, str]
#: Metadata to merge into a record's on update: a string value sets its
#: key, ``None`` (or ``""``) removes it, keys not named stay.
MetadataUpdate = Mapping[str, Optional[str]]


class _Unset:
    """The default of the optional fields of ``update_...`` methods: the
    field is not sent and keeps its value (``None`` sends ``null``, which
    clears the fields that allow it, such as a task's ``due_at``)."""

    _instance: Optional["_Unset"] = None

    def __new__(cls) -> "_Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()


def _body(**fields: Any) -> Dict[str, Any]:
    """A request body of the fields that are set (not UNSET); times are
    formatted."""
    out: Dict[str, Any] = {}
    for k, v in fields.items():
        if v is UNSET:
            continue
        if isinstance(v, (_dt.datetime, _dt.date)):
            v = format_time(v)
        out[k] = v
    return out


def _opt(**fields: Any) -> Dict[str, Any]:
    """A request body of the fields that are not None."""
    return _body(**{k: (UNSET if v is None else v) for k, v in fields.items()})


def _md(metadata: Any) -> Any:
    """The metadata of a request body: a dict copy of a mapping; None and
    UNSET stay as they are."""
    if metadata is None or metadata is UNSET:
        return metadata
    return dict(metadata)


class Client:
    """A client of the ams v1 API.

    >>> import ams
    >>> client = ams.Client(api_key="ams_sk_...", base_url="http://127.0.0.1:8080")
    >>> reply = client.send_message("ast_...", "Hello!")
    >>> print(reply.content)

    ``api_key`` is an API key (``ams_sk_...``); ``access_token`` an OAuth
    access token (``ams_at_...``) acting for a user; give one (by default
    ``$AMS_API_KEY``). ``base_url`` is the server root (by default
    ``$AMS_BASE_URL`` or ``http://127.0.0.1:8080``); a trailing ``/v1`` is
    accepted. ``timeout`` bounds each network operation of an attempt
    (connecting, each read) in seconds; ``None`` waits forever.
    ``max_retries`` is how many times a request is retried after a 429, a
    5xx or a connection failure (0 disables it): waits follow
    ``Retry-After`` (up to 60 s; a longer one raises at once) or an
    exponential backoff. Every POST carries an ``Idempotency-Key``
    (generated unless you pass ``idempotency_key``), the same on each
    retry, so that a retried POST never acts twice; PATCH is retried only
    when the server surely did not run it (429).

    Records that carry ``metadata`` (assistants, conversations, messages,
    tasks, calendar events, webhooks) take it in their ``create_...``
    method, as a mapping of strings, and in their ``update_...`` method,
    where it is merged into the record's: a ``None`` (or ``""``) value
    removes its key, keys not named stay. A violation of the limits raises
    ``InvalidRequestError`` naming ``metadata`` or ``metadata.<key>``, and
    nothing is stored.

    The client is safe to share between threads.
    """

    def __init__(
        self,
        api_key: Optional[str] = None,
        *,
        access_token: Optional[str] = None,
        base_url: Optional[str] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        user_agent: Optional[str] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if api_key and access_token:
            raise ValueError("give api_key or access_token, not both")
        token = api_key or access_token or os.environ.get("AMS_API_KEY")
        if not token:
            raise ValueError("an api_key (or access_token) is required: pass it or set AMS_API_KEY")
        ua = "ams-python/" + __version__
        if user_agent:
            ua = user_agent.strip() + " " + ua
        self._t = Transport(
            base_url or os.environ.get("AMS_BASE_URL") or DEFAULT_BASE_URL,
            token,
            timeout=timeout,
            max_retries=max_retries,
            user_agent=ua,
            sleep=sleep,
        )

    @property
    def base_url(self) -> str:
        """The server root, without ``/v1``."""
        return self._t.base_url

    def __repr__(self) -> str:
        return "ams.Client(base_url=%r)" % self._t.base_url

    # -- generic ------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        idempotency_key: Optional[str] = None,
    ) -> Any:
        """Call any endpoint: ``path`` is relative to ``/v1`` (such as
        ``"/assistants"``); returns the decoded JSON answer (``None`` for an
        empty one). Retries and errors as for the typed methods."""
        _, _, data = self._t.request(method, path, query=query, body=body, idempotency_key=idempotency_key)
        return data

    def _one(self, cls: Type[R], method: str, path: str, **kw: Any) -> R:
        data = self.request(method, path, **kw)
        return cls.from_dict(data if isinstance(data, dict) else {})

    def _page(self, cls: Type[R], path: str, query: Dict[str, Any]) -> Page[R]:
        data = self.request("GET", path, query=query) or {}
        return Page(
            data=[cls.from_dict(x) for x in data.get("data") or []],
            has_more=bool(data.get("has_more")),
            first_id=data.get("first_id"),
            last_id=data.get("last_id"),
        )

    def _iter(self, cls: Type[R], path: str, query: Dict[str, Any]) -> Iterator[R]:
        q = dict(query)
        while True:
            page = self._page(cls, path, q)
            for item in page.data:
                yield item
            if not page.has_more or not page.last_id:
                return
            q["after"] = page.last_id
            q.pop("before", None)

    @staticmethod
    def _list_query(limit: Optional[int], after: Optional[str], before: Optional[str], order: Optional[str], **extra: Any) -> Dict[str, Any]:
        q: Dict[str, Any] = {"limit": limit, "after": after, "before": before, "order": order}
        q.update(extra)
        return q

    def get_openapi(self) -> Dict[str, Any]:
        """The server's OpenAPI 3.1 document (``GET /v1/openapi.json``)."""
        return self.request("GET", "/openapi.json")  # type: ignore[no-any-return]

    # -- assistants ---------------------------------------------------------

    def create_assistant(
        self,
        name: str,
        *,
        description: Optional[str] = None,
        instructions: Optional[str] = None,
        model: Optional[str] = None,
        metadata: Optional[Metadata] = None,
        idempotency_key: Optional[str] = None,
    ) -> Assistant:
        """Create an assistant (``POST /v1/assistants``; permission ``write``)."""
        body = _opt(name=name, description=description, instructions=instructions, model=model, metadata=_md(metadata))
        return self._one(Assistant, "POST", "/assistants", body=body, idempotency_key=idempotency_key)

    def list_assistants(
        self, *, limit: Optional[int] = None, after: Optional[str] = None, before: Optional[str] = None, order: Optional[str] = None
    ) -> Page[Assistant]:
        """One page of assistants (``GET /v1/assistants``), newest first
        unless ``order="asc"``."""
        return self._page(Assistant, "/assistants", self._list_query(limit, after, before, order))

    def iter_assistants(self, *, limit: Optional[int] = None, order: Optional[str] = None) -> Iterator[Assistant]:
        """Every assistant, page after page (``limit`` is the page size)."""
        return self._iter(Assistant, "/assistants", self._list_query(limit, None, None, order))

    def get_assistant(self, assistant_id: str) -> Assistant:
        """``GET /v1/assistants/{id}``."""
        return self._one(Assistant, "GET", "/assistants/" + seg(assistant_id))

    def update_assistant(
        self,
        assistant_id: str,
        *,
        name: Any = UNSET,
        description: Any = UNSET,
        instructions: Any = UNSET,
        model: Any = UNSET,
        metadata: Any = UNSET,
        tools: Any = UNSET,
        require_approval: Any = UNSET,
        multitask_strategy: Any = UNSET,
    ) -> Assistant:
        """Change the fields given (``PATCH /v1/assistants/{id}``);
        ``metadata`` (a ``MetadataUpdate``) is merged into the assistant's.
        ``tools`` (client function tools), ``require_approval`` (tool names,
        or ``["*"]``) and ``multitask_strategy`` are the assistant's turn
        defaults."""
        body = _body(name=name, description=description, instructions=instructions, model=model, metadata=_md(metadata),
                     tools=tools, require_approval=require_approval, multitask_strategy=multitask_strategy)
        return self._one(Assistant, "PATCH", "/assistants/" + seg(assistant_id), body=body)

    def delete_assistant(self, assistant_id: str) -> None:
        """``DELETE /v1/assistants/{id}``."""
        self.request("DELETE", "/assistants/" + seg(assistant_id))

    # -- assistant actions --------------------------------------------------

    def run_action(
        self,
        assistant_id: str,
        type: str,
        input: Optional[Mapping[str, Any]] = None,
        *,
        idempotency_key: Optional[str] = None,
    ) -> Action:
        """Run one of the assistant's tools directly (``POST
        /v1/assistants/{id}/actions``; permission ``messages``), such as
        ``run_action(ast, "create_task", {"title": "Call Ana"})``."""
        body = _opt(type=type, input=dict(input) if input is not None else None)
        return self._one(Action, "POST", "/assistants/%s/actions" % seg(assistant_id), body=body, idempotency_key=idempotency_key)

    def list_actions(
        self,
        assistant_id: str,
        *,
        conversation_id: Optional[str] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        order: Optional[str] = None,
    ) -> Page[Action]:
        """One page of the assistant's actions; with ``conversation_id``,
        only those run while answering in that conversation."""
        q = self._list_query(limit, after, before, order, conversation_id=conversation_id)
        return self._page(Action, "/assistants/%s/actions" % seg(assistant_id), q)

    def iter_actions(
        self, assistant_id: str, *, conversation_id: Optional[str] = None, limit: Optional[int] = None, order: Optional[str] = None
    ) -> Iterator[Action]:
        """Every action of the assistant (of one conversation if
        ``conversation_id`` is given), page after page."""
        q = self._list_query(limit, None, None, order, conversation_id=conversation_id)
        return self._iter(Action, "/assistants/%s/actions" % seg(assistant_id), q)

    def get_action(self, assistant_id: str, action_id: str) -> Action:
        """``GET /v1/assistants/{id}/actions/{action_id}``."""
        return self._one(Action, "GET", "/assistants/%s/actions/%s" % (seg(assistant_id), seg(action_id)))

    # -- messages -----------------------------------------------------------

    def send_message(
        self,
        assistant_id: str,
        message: str,
        *,
        conversation_id: Optional[str] = None,
        metadata: Optional[Metadata] = None,
        idempotency_key: Optional[str] = None,
        multitask_strategy: Optional[str] = None,
    ) -> Message:
        """Send a message and return the assistant's reply (``POST
        /v1/messages``; permission ``messages``). Without
        ``conversation_id`` a new conversation starts: the reply's
        ``conversation_id`` names it (``create_conversation`` starts one
        with a title and metadata first). ``metadata`` is stored on the
        inbound message (the reply has none). ``multitask_strategy`` says
        what to do when the conversation has an unfinished turn:
        ``"enqueue"`` (the default: wait for it), ``"reject"`` (``409``
        ``conversation_busy``) or ``"interrupt"`` (cancel it)."""
        body = _opt(assistant_id=assistant_id, message=message, conversation_id=conversation_id, metadata=_md(metadata),
                    multitask_strategy=multitask_strategy)
        return self._one(Message, "POST", "/messages", body=body, idempotency_key=idempotency_key)

    def send_message_background(
        self,
        assistant_id: str,
        message: str,
        *,
        conversation_id: Optional[str] = None,
        metadata: Optional[Metadata] = None,
        idempotency_key: Optional[str] = None,
        multitask_strategy: Optional[str] = None,
    ) -> Turn:
        """Send a message with ``"background": true`` (``POST
        /v1/messages``, answered ``202``): returns the turn at once,
        ``queued`` or ``running``. It runs on the server (another process
        takes it over if its process dies); follow it with ``get_turn``,
        its stream, or the ``turn.*`` events."""
        body = _opt(assistant_id=assistant_id, message=message, conversation_id=conversation_id, metadata=_md(metadata),
                    multitask_strategy=multitask_strategy, background=True)
        return self._one(Turn, "POST", "/messages", body=body, idempotency_key=idempotency_key)

    def send_message_stream(
        self,
        assistant_id: str,
        message: str,
        *,
        conversation_id: Optional[str] = None,
        metadata: Optional[Metadata] = None,
        idempotency_key: Optional[str] = None,
    ) -> Iterator[MessageStreamEvent]:
        """Send a message with ``"stream": true`` and yield the turn's
        events as the server produces them: ``turn.started`` (naming the
        turn), ``tool_call`` and ``tool_result`` for each tool call of the
        engine, ``message.delta`` events (``delta``, the next piece of
        text), then one ``message.completed`` (``message``, the stored
        reply), the last.

        >>> for ev in client.send_message_stream(ast, "Hi"):
        ...     print(ev.delta, end="", flush=True)

        The request is sent when the iteration starts. Errors before the
        stream starts are raised (and retried) as for ``send_message``. An
        ``error`` event raises the ``AmsError`` it carries (status 200: the
        turn failed, keeping what its tool calls did; send again with the
        same ``idempotency_key`` to resume it). A dropped connection is
        resumed from the last event received (``GET
        /v1/turns/{id}/events`` with ``Last-Event-ID``), up to the client's
        ``max_retries``, so that no event is lost or repeated; after that
        it raises ``APIConnectionError``. Leaving the loop early closes the
        connection; the turn runs on (``cancel_turn`` stops it).
        ``metadata`` is stored on the inbound message, as for
        ``send_message``."""
        key = idempotency_key or new_idempotency_key()
        body = _opt(assistant_id=assistant_id, message=message, conversation_id=conversation_id, metadata=_md(metadata))
        body["stream"] = True
        return self._stream(body, key)

    def _stream(self, body: Dict[str, Any], key: str) -> Iterator[MessageStreamEvent]:
        t = self._t
        url = t.url("/messages")
        h = t.headers(accept="text/event-stream")
        h["Content-Type"] = "application/json"
        h["Idempotency-Key"] = key
        payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        resp = t.open("POST", url, h, payload)
        rh = dict(resp.headers.items())
        if "text/event-stream" not in rh.get("Content-Type", ""):
            try:
                # A server that answered with the plain reply.
                data = json.loads(resp.read().decode("utf-8"))
            except (OSError, ValueError, http.client.HTTPException) as e:
                raise APIConnectionError("POST %s: reading the answer failed: %s" % (url, e)) from e
            finally:
                resp.close()
            yield MessageCompletedEvent(type="message.completed", message=Message.from_dict(data))
            return
        state = {"turn_id": rh.get("X-Turn-Id", ""), "last_id": ""}
        yield from self._turn_events(resp, state, "POST %s" % url)

    def _turn_events(self, resp: Any, state: Dict[str, str], what: str) -> Iterator[MessageStreamEvent]:
        """Yield the events of resp, then of resumed connections (GET
        /turns/{id}/events after state["last_id"]) until the turn's last
        event."""
        t = self._t
        reconnects = 0
        while True:
            try:
                if resp is None:
                    url = t.url("/turns/%s/events" % seg(state["turn_id"]))
                    h = t.headers(accept="text/event-stream")
                    if state["last_id"]:
                        h["Last-Event-ID"] = state["last_id"]
                    resp = t.open("GET", url, h, None)
                rh = dict(resp.headers.items())
                for eid, name, data in _read_sse(resp):
                    if name == "error":
                        if eid:
                            state["last_id"] = eid
                        raise error_from_response(200, data.encode("utf-8"), rh)
                    cls = _STREAM_EVENTS.get(name)
                    if cls is None:
                        if eid:
                            state["last_id"] = eid
                        continue  # other events are for later versions: skipped
                    d = json.loads(data)
                    ev: MessageStreamEvent = cls(type=name, id=eid, turn_id=state["turn_id"], data=d if isinstance(d, dict) else {})
                    if isinstance(ev, TurnStartedEvent):
                        state["turn_id"] = ev.turn_id = str(ev.data.get("turn_id", ""))
                    elif isinstance(ev, ToolResultEvent):
                        a = ev.data.get("action")
                        ev.action = Action.from_dict(a if isinstance(a, dict) else {})
                    elif isinstance(ev, MessageDeltaEvent):
                        delta = ev.data.get("delta", "")
                        ev.delta = delta if isinstance(delta, str) else ""
                    elif isinstance(ev, MessageCompletedEvent):
                        ev.message = Message.from_dict(ev.data)
                    if eid:
                        state["last_id"] = eid
                    yield ev
                    if isinstance(ev, MessageCompletedEvent):
                        return
                cause: Optional[BaseException] = None
            except (OSError, ValueError, http.client.HTTPException) as e:
                # A cut connection: an OSError (reset), an
                # http.client.IncompleteRead (cut inside a chunk), a
                # ValueError (a cut chunk-size line or UTF-8 sequence).
                if isinstance(e, AmsError):
                    raise
                cause = e
            finally:
                if resp is not None:
                    resp.close()
                resp = None
            if not state["turn_id"] or reconnects >= t.max_retries:
                msg = "%s: the stream ended before the reply was complete; send again with the same idempotency_key" % what
                if state["turn_id"]:
                    msg += " (or follow_turn(%r, last_event_id=%r))" % (state["turn_id"], state["last_id"])
                if cause is not None:
                    msg += ": %s" % cause
                raise APIConnectionError(msg)
            t.sleep(backoff(reconnects))
            reconnects += 1

    # -- turns --------------------------------------------------------------

    def get_turn(self, turn_id: str) -> Turn:
        """``GET /v1/turns/{id}``: the turn's state."""
        return self._one(Turn, "GET", "/turns/" + seg(turn_id))

    def list_turns(
        self,
        *,
        conversation_id: Optional[str] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        order: Optional[str] = None,
    ) -> Page[Turn]:
        """``GET /v1/turns``: one page of turns, of one conversation if
        ``conversation_id`` is given."""
        return self._page(Turn, "/turns", self._list_query(limit, after, before, order, conversation_id=conversation_id))

    def iter_turns(self, *, conversation_id: Optional[str] = None, limit: Optional[int] = None, order: Optional[str] = None) -> Iterator[Turn]:
        """Every turn (of one conversation if given), page after page."""
        return self._iter(Turn, "/turns", self._list_query(limit, None, None, order, conversation_id=conversation_id))

    def cancel_turn(self, turn_id: str, *, idempotency_key: Optional[str] = None) -> Turn:
        """``POST /v1/turns/{id}/cancel``: stop a running turn. Returns it
        ``cancelled``, or still ``running`` with ``cancel_requested`` when
        another server process runs it; a turn that has ended unchanged."""
        return self._one(Turn, "POST", "/turns/%s/cancel" % seg(turn_id), idempotency_key=idempotency_key)

    def submit_tool_outputs(self, turn_id: str, tool_outputs: Sequence[Mapping[str, Any]], *, idempotency_key: Optional[str] = None) -> Turn:
        """``POST /v1/turns/{id}/tool_outputs``: answer every client tool
        call the turn waits for, as ``[{"tool_call_id", "output"}]``.
        Returns the turn once its resumed attempt ended or stopped again."""
        body = {"tool_outputs": [dict(o) for o in tool_outputs]}
        return self._one(Turn, "POST", "/turns/%s/tool_outputs" % seg(turn_id), body=body, idempotency_key=idempotency_key)

    def approve_tool_calls(self, turn_id: str, approvals: Sequence[Mapping[str, Any]], *, idempotency_key: Optional[str] = None) -> Turn:
        """``POST /v1/turns/{id}/approvals``: decide on every tool call the
        turn waits to have approved, as ``[{"tool_call_id", "approved",
        "reason"?}]``. Returns the turn as ``submit_tool_outputs`` does."""
        body = {"approvals": [dict(a) for a in approvals]}
        return self._one(Turn, "POST", "/turns/%s/approvals" % seg(turn_id), body=body, idempotency_key=idempotency_key)

    def run_turn(
        self,
        assistant_id: str,
        message: str,
        on_tool_call: Callable[[RequiredToolCall], str],
        *,
        tools: Optional[List[Mapping[str, Any]]] = None,
        tool_choice: Any = None,
        instructions: Optional[str] = None,
        max_output_tokens: Optional[int] = None,
        conversation_id: Optional[str] = None,
        approve: Optional[Callable[[RequiredToolCall], Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Tuple[Turn, Optional[Message]]:
        """Send a message and run its turn to the end: whenever the turn
        waits for client tool outputs, ``on_tool_call(call)`` gives each
        call's output (a string) and they are submitted; calls that wait
        for approval are decided by ``approve(call)`` (``True``/``False``,
        or ``(bool, reason)``; without it such a turn is returned waiting).
        Returns the turn as it ended and its reply (``None`` unless it
        completed)."""
        body = _opt(assistant_id=assistant_id, message=message, conversation_id=conversation_id, tools=[dict(t) for t in tools] if tools else None,
                    tool_choice=tool_choice, instructions=instructions, max_output_tokens=max_output_tokens)
        data = self.request("POST", "/messages", body=body, idempotency_key=idempotency_key) or {}
        if data.get("object") == "message":
            reply = Message.from_dict(data)
            page = self.list_turns(conversation_id=reply.conversation_id, limit=1)
            return (page.data[0] if page.data else Turn()), reply
        turn = Turn.from_dict(data)
        while turn.status == "requires_action" and turn.required_action is not None:
            ra = turn.required_action
            if ra.type == "submit_tool_outputs":
                outs = [{"tool_call_id": c.id, "output": on_tool_call(c)} for c in ra.tool_calls]
                turn = self.submit_tool_outputs(turn.id, outs)
            elif ra.type == "approve_tool_calls" and approve is not None:
                decisions = []
                for c in ra.tool_calls:
                    d = approve(c)
                    ok, reason = (d if isinstance(d, tuple) else (bool(d), ""))
                    decisions.append({"tool_call_id": c.id, "approved": bool(ok), "reason": reason or ""})
                turn = self.approve_tool_calls(turn.id, decisions)
            else:
                break
        reply_msg = self.get_message(turn.reply_message_id) if turn.status == "completed" and turn.reply_message_id else None
        return turn, reply_msg

    def cancel_message(self, message_id: str, *, idempotency_key: Optional[str] = None) -> Turn:
        """``POST /v1/messages/{id}/cancel``: ``cancel_turn`` for the turn
        whose inbound message is ``message_id``."""
        return self._one(Turn, "POST", "/messages/%s/cancel" % seg(message_id), idempotency_key=idempotency_key)

    def follow_turn(self, turn_id: str, *, last_event_id: Optional[str] = None) -> Iterator[MessageStreamEvent]:
        """``GET /v1/turns/{id}/events``: yield the turn's events after
        ``last_event_id`` (from its start without it), live while it runs,
        to its last event (``message.completed``; an ``error`` event raises
        its ``AmsError``). A dropped connection is resumed as in
        ``send_message_stream``."""
        state = {"turn_id": turn_id, "last_id": last_event_id or ""}
        return self._turn_events(None, state, "GET /v1/turns/%s/events" % turn_id)

    def get_message(self, message_id: str) -> Message:
        """``GET /v1/messages/{id}``."""
        return self._one(Message, "GET", "/messages/" + seg(message_id))

    def update_message(self, message_id: str, content: Any = UNSET, *, metadata: Any = UNSET) -> Message:
        """Edit a message (``PATCH /v1/messages/{id}``): the ``content`` of
        an inbound message (a reply's raises ``InvalidRequestError``
        ``message_not_editable``), and the ``metadata`` (a
        ``MetadataUpdate``) of any message, merged into its own. Give at
        least one."""
        body = _body(content=content, metadata=_md(metadata))
        return self._one(Message, "PATCH", "/messages/" + seg(message_id), body=body)

    def delete_message(self, message_id: str) -> None:
        """``DELETE /v1/messages/{id}``."""
        self.request("DELETE", "/messages/" + seg(message_id))

    # -- conversations ------------------------------------------------------

    def create_conversation(
        self,
        assistant_id: str,
        *,
        title: Optional[str] = None,
        metadata: Optional[Metadata] = None,
        idempotency_key: Optional[str] = None,
    ) -> Conversation:
        """Start an empty conversation with the assistant (``POST
        /v1/conversations``; permission ``messages``); send messages into it
        with ``send_message(..., conversation_id=conv.id)``. ``title`` is at
        most 200 characters."""
        body = _opt(assistant_id=assistant_id, title=title, metadata=_md(metadata))
        return self._one(Conversation, "POST", "/conversations", body=body, idempotency_key=idempotency_key)

    def update_conversation(self, conversation_id: str, *, title: Any = UNSET, metadata: Any = UNSET) -> Conversation:
        """Change the fields given (``PATCH /v1/conversations/{id}``):
        ``title`` (``""`` empties it), and ``metadata`` (a
        ``MetadataUpdate``) merged into the conversation's."""
        body = _body(title=title, metadata=_md(metadata))
        return self._one(Conversation, "PATCH", "/conversations/" + seg(conversation_id), body=body)

    def delete_conversation(self, conversation_id: str) -> None:
        """Delete the conversation and its messages (``DELETE
        /v1/conversations/{id}``): ``message.deleted`` is emitted for each
        message. The actions run in it stay, with its id in their
        ``conversation_id``; the tasks and calendar events they made
        stay too."""
        self.request("DELETE", "/conversations/" + seg(conversation_id))

    def list_conversations(
        self,
        *,
        assistant_id: Optional[str] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        order: Optional[str] = None,
    ) -> Page[Conversation]:
        """One page of conversations, of one assistant if given."""
        return self._page(Conversation, "/conversations", self._list_query(limit, after, before, order, assistant_id=assistant_id))

    def iter_conversations(
        self, *, assistant_id: Optional[str] = None, limit: Optional[int] = None, order: Optional[str] = None
    ) -> Iterator[Conversation]:
        """Every conversation, page after page."""
        return self._iter(Conversation, "/conversations", self._list_query(limit, None, None, order, assistant_id=assistant_id))

    def get_conversation(self, conversation_id: str) -> Conversation:
        """``GET /v1/conversations/{id}``."""
        return self._one(Conversation, "GET", "/conversations/" + seg(conversation_id))

    def list_conversation_messages(
        self,
        conversation_id: str,
        *,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        order: Optional[str] = None,
    ) -> Page[Message]:
        """One page of a conversation's messages (newest first unless
        ``order="asc"``)."""
        return self._page(Message, "/conversations/%s/messages" % seg(conversation_id), self._list_query(limit, after, before, order))

    def iter_conversation_messages(
        self, conversation_id: str, *, limit: Optional[int] = None, order: Optional[str] = None
    ) -> Iterator[Message]:
        """Every message of a conversation, page after page."""
        return self._iter(Message, "/conversations/%s/messages" % seg(conversation_id), self._list_query(limit, None, None, order))

    # -- tasks --------------------------------------------------------------

    def create_task(
        self,
        assistant_id: str,
        title: str,
        *,
        notes: Optional[str] = None,
        due_at: Optional[Time] = None,
        remind_at: Optional[Time] = None,
        metadata: Optional[Metadata] = None,
        idempotency_key: Optional[str] = None,
    ) -> Task:
        """``POST /v1/tasks`` (permission ``write``). Times are datetimes
        (naive ones are UTC) or RFC 3339 strings."""
        body = _opt(assistant_id=assistant_id, title=title, notes=notes, due_at=due_at, remind_at=remind_at, metadata=_md(metadata))
        return self._one(Task, "POST", "/tasks", body=body, idempotency_key=idempotency_key)

    def list_tasks(
        self,
        *,
        assistant_id: Optional[str] = None,
        status: Optional[str] = None,
        due_after: Optional[Time] = None,
        due_before: Optional[Time] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        order: Optional[str] = None,
    ) -> Page[Task]:
        """One page of tasks; ``status`` is ``"open"`` or ``"completed"``."""
        q = self._list_query(limit, after, before, order, assistant_id=assistant_id, status=status, due_after=due_after, due_before=due_before)
        return self._page(Task, "/tasks", q)

    def iter_tasks(
        self,
        *,
        assistant_id: Optional[str] = None,
        status: Optional[str] = None,
        due_after: Optional[Time] = None,
        due_before: Optional[Time] = None,
        limit: Optional[int] = None,
        order: Optional[str] = None,
    ) -> Iterator[Task]:
        """Every task matching the filters, page after page."""
        q = self._list_query(limit, None, None, order, assistant_id=assistant_id, status=status, due_after=due_after, due_before=due_before)
        return self._iter(Task, "/tasks", q)

    def get_task(self, task_id: str) -> Task:
        """``GET /v1/tasks/{id}``."""
        return self._one(Task, "GET", "/tasks/" + seg(task_id))

    def update_task(
        self,
        task_id: str,
        *,
        title: Any = UNSET,
        notes: Any = UNSET,
        due_at: Any = UNSET,
        remind_at: Any = UNSET,
        metadata: Any = UNSET,
    ) -> Task:
        """Change the fields given (``PATCH /v1/tasks/{id}``); ``None``
        clears ``due_at``, ``remind_at`` or ``notes``; ``metadata`` (a
        ``MetadataUpdate``) is merged into the task's."""
        body = _body(title=title, notes=notes, due_at=due_at, remind_at=remind_at, metadata=_md(metadata))
        return self._one(Task, "PATCH", "/tasks/" + seg(task_id), body=body)

    def delete_task(self, task_id: str) -> None:
        """``DELETE /v1/tasks/{id}``; emits ``task.deleted`` with the task
        as it was."""
        self.request("DELETE", "/tasks/" + seg(task_id))

    def complete_task(self, task_id: str, *, idempotency_key: Optional[str] = None) -> Task:
        """Mark a task completed (``POST /v1/tasks/{id}/complete``)."""
        return self._one(Task, "POST", "/tasks/%s/complete" % seg(task_id), idempotency_key=idempotency_key)

    # -- calendar events ----------------------------------------------------

    def create_calendar_event(
        self,
        assistant_id: str,
        title: str,
        starts_at: Time,
        *,
        ends_at: Optional[Time] = None,
        description: Optional[str] = None,
        location: Optional[str] = None,
        remind_at: Optional[Time] = None,
        metadata: Optional[Metadata] = None,
        idempotency_key: Optional[str] = None,
    ) -> CalendarEvent:
        """``POST /v1/calendar/events`` (permission ``write``); ``ends_at``
        defaults to an hour after ``starts_at``."""
        body = _opt(
            assistant_id=assistant_id,
            title=title,
            starts_at=starts_at,
            ends_at=ends_at,
            description=description,
            location=location,
            remind_at=remind_at,
            metadata=_md(metadata),
        )
        return self._one(CalendarEvent, "POST", "/calendar/events", body=body, idempotency_key=idempotency_key)

    def list_calendar_events(
        self,
        *,
        assistant_id: Optional[str] = None,
        starts_after: Optional[Time] = None,
        starts_before: Optional[Time] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        order: Optional[str] = None,
        deleted: bool = False,
    ) -> Page[CalendarEvent]:
        """One page of calendar events; with ``deleted=True``, of the deleted
        ones that can still be restored (30 days)."""
        q = self._list_query(
            limit,
            after,
            before,
            order,
            assistant_id=assistant_id,
            starts_after=starts_after,
            starts_before=starts_before,
            deleted="true" if deleted else None,
        )
        return self._page(CalendarEvent, "/calendar/events", q)

    def iter_calendar_events(
        self,
        *,
        assistant_id: Optional[str] = None,
        starts_after: Optional[Time] = None,
        starts_before: Optional[Time] = None,
        limit: Optional[int] = None,
        order: Optional[str] = None,
    ) -> Iterator[CalendarEvent]:
        """Every calendar event matching the filters, page after page."""
        q = self._list_query(limit, None, None, order, assistant_id=assistant_id, starts_after=starts_after, starts_before=starts_before)
        return self._iter(CalendarEvent, "/calendar/events", q)

    def get_calendar_event(self, event_id: str) -> CalendarEvent:
        """``GET /v1/calendar/events/{id}``."""
        return self._one(CalendarEvent, "GET", "/calendar/events/" + seg(event_id))

    def update_calendar_event(
        self,
        event_id: str,
        *,
        title: Any = UNSET,
        description: Any = UNSET,
        location: Any = UNSET,
        starts_at: Any = UNSET,
        ends_at: Any = UNSET,
        remind_at: Any = UNSET,
        metadata: Any = UNSET,
    ) -> CalendarEvent:
        """Change the fields given (``PATCH /v1/calendar/events/{id}``); a
        new ``starts_at`` alone moves the event, keeping its length;
        ``metadata`` (a ``MetadataUpdate``) is merged into the event's."""
        body = _body(
            title=title,
            description=description,
            location=location,
            starts_at=starts_at,
            ends_at=ends_at,
            remind_at=remind_at,
            metadata=_md(metadata),
        )
        return self._one(CalendarEvent, "PATCH", "/calendar/events/" + seg(event_id), body=body)

    def delete_calendar_event(self, event_id: str) -> None:
        """``DELETE /v1/calendar/events/{id}``; emits ``event.deleted`` with
        the calendar event as it was. It can be restored for 30 days
        (``restore_calendar_event``)."""
        self.request("DELETE", "/calendar/events/" + seg(event_id))

    def restore_calendar_event(self, event_id: str, *, idempotency_key: Optional[str] = None) -> CalendarEvent:
        """Bring back a calendar event deleted through the API or by a
        calendar sync in the last 30 days (``POST
        /v1/calendar/events/{id}/restore``; permission ``write``); emits
        ``event.restored``. ``ConflictError`` (``calendar_event_not_deleted``)
        for a live event."""
        return self._one(CalendarEvent, "POST", "/calendar/events/%s/restore" % seg(event_id), idempotency_key=idempotency_key)

    # -- integrations -------------------------------------------------------

    def create_integration(
        self,
        provider: str,
        config: Optional[Mapping[str, Any]] = None,
        *,
        secrets: Optional[Mapping[str, Any]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Integration:
        """Connect an outside service (``POST /v1/integrations``; permission
        ``integrations``), e.g. ``create_integration("caldav", {"url": ...,
        "username": ...}, secrets={"password": ...})``. The server tries the
        connection first. An MCP server: ``create_mcp_integration``."""
        body = _opt(provider=provider, config=dict(config) if config is not None else None,
                    secrets=dict(secrets) if secrets is not None else None)
        return self._one(Integration, "POST", "/integrations", body=body, idempotency_key=idempotency_key)

    def create_mcp_integration(
        self,
        name: str,
        url: str,
        *,
        headers: Optional[Mapping[str, str]] = None,
        allowed_tools: Optional[Sequence[str]] = None,
        require_approval: Optional[Sequence[str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Integration:
        """Connect an MCP server (``POST /v1/integrations``, provider
        ``mcp``; permission ``integrations``), e.g.
        ``create_mcp_integration("everything", "https://mcp.example.com/mcp",
        headers={"Authorization": "Bearer ..."})``. The server connects
        (initialize, tools/list) before answering, with the tools in
        ``tools``; the assistants run them as ``<name>__<tool>``
        (``run_action(ast, "everything__get-sum", {"a": 1, "b": 2})``).
        The headers are stored sealed and never returned."""
        body = _opt(provider="mcp", name=name, url=url, headers=dict(headers) if headers is not None else None,
                    allowed_tools=list(allowed_tools) if allowed_tools is not None else None,
                    require_approval=list(require_approval) if require_approval is not None else None)
        return self._one(Integration, "POST", "/integrations", body=body, idempotency_key=idempotency_key)

    def list_integrations(
        self, *, limit: Optional[int] = None, after: Optional[str] = None, before: Optional[str] = None, order: Optional[str] = None
    ) -> Page[Integration]:
        """One page of integrations."""
        return self._page(Integration, "/integrations", self._list_query(limit, after, before, order))

    def iter_integrations(self, *, limit: Optional[int] = None, order: Optional[str] = None) -> Iterator[Integration]:
        """Every integration, page after page."""
        return self._iter(Integration, "/integrations", self._list_query(limit, None, None, order))

    def get_integration(self, integration_id: str) -> Integration:
        """``GET /v1/integrations/{id}``."""
        return self._one(Integration, "GET", "/integrations/" + seg(integration_id))

    def delete_integration(self, integration_id: str) -> None:
        """Disconnect (``DELETE /v1/integrations/{id}``)."""
        self.request("DELETE", "/integrations/" + seg(integration_id))

    def sync_integration(self, integration_id: str, *, idempotency_key: Optional[str] = None) -> Integration:
        """Sync now (``POST /v1/integrations/{id}/sync``)."""
        return self._one(Integration, "POST", "/integrations/%s/sync" % seg(integration_id), idempotency_key=idempotency_key)

    def create_calendar_feed(self, *, idempotency_key: Optional[str] = None) -> CalendarFeed:
        """Create (or renew) the account's secret iCalendar feed URL
        (``POST /v1/calendar/feed``)."""
        return self._one(CalendarFeed, "POST", "/calendar/feed", idempotency_key=idempotency_key)

    # -- events -------------------------------------------------------------

    def list_events(
        self,
        *,
        type: Optional[str] = None,
        created_after: Optional[Time] = None,
        created_before: Optional[Time] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        order: Optional[str] = None,
    ) -> Page[Event]:
        """One page of the account's events (kept 30 days), of one type if
        given (such as ``"message.created"``) and created strictly after
        ``created_after`` and before ``created_before`` if given.

        The list only grows at its end: following it with ``order="asc"``
        and ``after=`` the last id seen (polling again with that id when
        ``has_more`` is false) yields every event exactly once, even one
        whose change committed late. An event is listed once every change
        that began writing before it has finished, which may be a moment
        after ``get_event`` or a webhook has it."""
        q = self._list_query(limit, after, before, order, type=type, created_after=created_after, created_before=created_before)
        return self._page(Event, "/events", q)

    def iter_events(
        self,
        *,
        type: Optional[str] = None,
        created_after: Optional[Time] = None,
        created_before: Optional[Time] = None,
        limit: Optional[int] = None,
        order: Optional[str] = None,
    ) -> Iterator[Event]:
        """Every event matching the filters, page after page."""
        q = self._list_query(limit, None, None, order, type=type, created_after=created_after, created_before=created_before)
        return self._iter(Event, "/events", q)

    def get_event(self, event_id: str) -> Event:
        """``GET /v1/events/{id}``: one event of the last 30 days."""
        return self._one(Event, "GET", "/events/" + seg(event_id))

    def trigger_event(self, type: str, *, idempotency_key: Optional[str] = None) -> Event:
        """``POST /v1/events/trigger``: record a test event of ``type``
        (such as ``"task.created"``), listed, streamed and delivered to the
        webhooks that subscribe to its type like any event of that type,
        its ``data`` a made-up record of the type and ``test`` True;
        returns the event. Permission ``write``."""
        return self._one(Event, "POST", "/events/trigger", body={"type": type}, idempotency_key=idempotency_key)

    def follow_events(self, *, type: Optional[str] = None, last_event_id: Optional[str] = None) -> Iterator[Event]:
        """``GET /v1/events/stream``: yield the account's events live, in
        the catch-up order of ``list_events(order="asc", after=...)``, after
        ``last_event_id`` (without it: the events that come after the
        newest one listed when following begins; for an account without
        events yet, all of its events), of one ``type`` if
        given. The iteration does not end by itself: leave the loop to
        stop. A dropped connection (or one silent for the client's
        ``timeout``; the server sends a keep-alive every 15 s) is resumed
        after the last event yielded (``Last-Event-ID``), so that no event
        is skipped or repeated; after ``max_retries`` failed resumptions in
        a row it raises ``APIConnectionError``. Errors when opening the
        stream (a bad key, a cursor that is no event) are raised as for any
        request."""
        t = self._t
        last = last_event_id or ""
        if not last:
            # Start after the newest event listed now, as the server would,
            # but with the cursor known here: a connection dropped before
            # the first event resumes from it, not from the newest event
            # of the moment of the resumption.
            newest = self.list_events(type=type, limit=1, order="desc").data
            if newest:
                last = newest[0].id
        failures = 0
        what = "GET /v1/events/stream"
        while True:
            if not last:
                # The account had no event (of this type) when following
                # began, so every event it has now is new: the oldest one,
                # if any (emitted while a connection was down), is the next
                # to yield, and the cursor to resume from.
                oldest = self.list_events(type=type, limit=1, order="asc").data
                if oldest:
                    last = oldest[0].id
                    yield oldest[0]
            resp: Any = None
            cause: Any = None
            wait: Optional[float] = None
            try:
                url = t.url("/events/stream", {"type": type} if type else None)
                h = t.headers(accept="text/event-stream")
                if last:
                    h["Last-Event-ID"] = last
                # One attempt: a failed one is retried by this loop, which
                # (without a cursor) first lists the events emitted since,
                # where a retry of the same request would open the stream
                # after them and skip them.
                wait, opened = t.try_open("GET", url, h, None, failures)
                if isinstance(opened, AmsError):
                    if wait is None:
                        raise opened
                    cause = opened
                else:
                    resp = opened
                    if "text/event-stream" not in dict(resp.headers.items()).get("Content-Type", ""):
                        raise APIConnectionError("%s: the answer is not an event stream" % what)
                    for eid, _name, data in _read_sse(resp):
                        if not eid:
                            continue  # not an event of the account (a later version's)
                        ev = Event.from_dict(json.loads(data))
                        last = eid
                        failures = 0
                        yield ev
            except AmsError:
                raise
            except (OSError, ValueError, http.client.HTTPException) as e:
                cause = e
            finally:
                if resp is not None:
                    resp.close()
            if failures >= t.max_retries:
                if isinstance(cause, AmsError) and not isinstance(cause, APIConnectionError):
                    raise cause  # the server's answer (429, 5xx), as a request would raise it
                msg = "%s: the stream ended and could not be resumed" % what
                if last:
                    msg += " after %s" % last
                if cause is not None:
                    msg += ": %s" % cause
                raise APIConnectionError(msg)
            t.sleep(wait if wait is not None else backoff(failures))
            failures += 1

    # -- webhooks -----------------------------------------------------------

    def create_webhook(
        self,
        url: str,
        events: Sequence[str],
        secret: str,
        *,
        active: Optional[bool] = None,
        metadata: Optional[Metadata] = None,
        ordered: Optional[bool] = None,
        filter: Optional[Mapping[str, str]] = None,
        payload: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Webhook:
        """Register an endpoint for the event types given, or ``["*"]``
        for every type, later ones included (``POST /v1/webhooks``;
        permission ``write``). ``secret`` (16 to 256
        characters; a ``whsec_<base64>`` secret suits the Standard Webhooks
        libraries) signs every delivery: keep it to verify them with
        ``ams.verify_signature`` or ``ams.verify_standard_webhook``.
        ``ordered=True``: one delivery at a time, in the order queued (the
        event log's, except between changes made at the same time).
        ``filter`` (``{"assistant_id": ..., "conversation_id": ...,
        "metadata.<key>": ...}``) keeps only the events whose fields equal
        those; ``payload="thin"`` delivers their ids only."""
        body = _opt(url=url, events=list(events), secret=secret, active=active, metadata=_md(metadata), ordered=ordered,
                    filter=dict(filter) if filter is not None else None, payload=payload)
        return self._one(Webhook, "POST", "/webhooks", body=body, idempotency_key=idempotency_key)

    def list_webhooks(
        self, *, limit: Optional[int] = None, after: Optional[str] = None, before: Optional[str] = None, order: Optional[str] = None
    ) -> Page[Webhook]:
        """One page of webhooks."""
        return self._page(Webhook, "/webhooks", self._list_query(limit, after, before, order))

    def iter_webhooks(self, *, limit: Optional[int] = None, order: Optional[str] = None) -> Iterator[Webhook]:
        """Every webhook, page after page."""
        return self._iter(Webhook, "/webhooks", self._list_query(limit, None, None, order))

    def get_webhook(self, webhook_id: str) -> Webhook:
        """``GET /v1/webhooks/{id}``."""
        return self._one(Webhook, "GET", "/webhooks/" + seg(webhook_id))

    def update_webhook(
        self,
        webhook_id: str,
        *,
        url: Any = UNSET,
        events: Any = UNSET,
        secret: Any = UNSET,
        active: Any = UNSET,
        previous_secret_expires_in: Any = UNSET,
        metadata: Any = UNSET,
        ordered: Any = UNSET,
        filter: Any = UNSET,
        payload: Any = UNSET,
    ) -> Webhook:
        """Change the fields given (``PATCH /v1/webhooks/{id}``);
        ``active=True`` turns a failing webhook back on. A new ``secret``
        leaves the replaced one signing ``webhook-signature`` beside it for
        ``previous_secret_expires_in`` seconds (0 to 604800; default 24 h).
        ``metadata`` (a ``MetadataUpdate``) is merged into the webhook's;
        ``ordered`` makes it ordered or not.
        ``filter`` replaces the webhook's (``None`` or ``{}`` removes it);
        ``payload`` is ``"full"`` or ``"thin"``."""
        body = _body(
            url=url,
            events=list(events) if events is not UNSET else UNSET,
            secret=secret,
            active=active,
            previous_secret_expires_in=previous_secret_expires_in,
            metadata=_md(metadata),
            ordered=ordered,
            filter=dict(filter) if filter not in (UNSET, None) else filter,
            payload=payload,
        )
        return self._one(Webhook, "PATCH", "/webhooks/" + seg(webhook_id), body=body)

    def delete_webhook(self, webhook_id: str) -> None:
        """``DELETE /v1/webhooks/{id}``."""
        self.request("DELETE", "/webhooks/" + seg(webhook_id))

    def ping_webhook(self, webhook_id: str, *, idempotency_key: Optional[str] = None) -> Event:
        """Queue a ``webhook.ping`` event for this webhook only (``POST
        /v1/webhooks/{id}/ping``); returns the event."""
        return self._one(Event, "POST", "/webhooks/%s/ping" % seg(webhook_id), idempotency_key=idempotency_key)

    def recover_webhook(
        self,
        webhook_id: str,
        since: Time,
        until: Optional[Time] = None,
        *,
        include_earlier: Optional[bool] = None,
        idempotency_key: Optional[str] = None,
    ) -> WebhookRecovery:
        """Queue again every event the webhook missed (``POST
        /v1/webhooks/{id}/recover``): those still kept (30 days), created
        at or after ``since`` and before ``until`` (default now), of a type
        it subscribes to, that it has not received and that are not
        already pending for it, oldest first; ``queued`` says how many.
        The webhook must be on (``ConflictError`` ``webhook_inactive``:
        ``update_webhook(id, active=True)`` first); asking twice queues
        only what is still missing. ``since`` is clamped to the webhook's
        creation unless ``include_earlier`` is true."""
        body = _opt(since=since, until=until, include_earlier=include_earlier)
        return self._one(WebhookRecovery, "POST", "/webhooks/%s/recover" % seg(webhook_id), body=body, idempotency_key=idempotency_key)

    def list_webhook_deliveries(
        self,
        webhook_id: str,
        *,
        event_id: Optional[str] = None,
        success: Optional[bool] = None,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        before: Optional[str] = None,
        order: Optional[str] = None,
    ) -> Page[WebhookDelivery]:
        """One page of the webhook's delivery attempts, of one event if
        given, only the successful (``success=True``) or failed
        (``success=False``) ones if asked."""
        flag = None if success is None else ("true" if success else "false")
        q = self._list_query(limit, after, before, order, event_id=event_id, success=flag)
        return self._page(WebhookDelivery, "/webhooks/%s/deliveries" % seg(webhook_id), q)

    def iter_webhook_deliveries(
        self, webhook_id: str, *, event_id: Optional[str] = None, limit: Optional[int] = None, order: Optional[str] = None
    ) -> Iterator[WebhookDelivery]:
        """Every delivery attempt of the webhook, page after page."""
        q = self._list_query(limit, None, None, order, event_id=event_id)
        return self._iter(WebhookDelivery, "/webhooks/%s/deliveries" % seg(webhook_id), q)

    def redeliver_webhook_delivery(
        self, webhook_id: str, delivery_id: str, *, idempotency_key: Optional[str] = None
    ) -> WebhookRedelivery:
        """Queue the event of a delivery attempt again (``POST
        /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver``)."""
        path = "/webhooks/%s/deliveries/%s/redeliver" % (seg(webhook_id), seg(delivery_id))
        return self._one(WebhookRedelivery, "POST", path, idempotency_key=idempotency_key)

    # -- management (permission admin) --------------------------------------

    def create_api_key(
        self,
        name: str,
        permissions: Sequence[str],
        *,
        expires_at: Optional[Time] = None,
        idempotency_key: Optional[str] = None,
    ) -> APIKey:
        """Create an API key of the account (``POST /v1/keys``; permission
        ``admin``). Its ``secret`` is in this answer only: only a hash is
        stored. The calling credential must hold each permission (``admin``
        holds all: else ``PermissionDeniedError`` ``permission_not_held``),
        and a caller that expires cannot create a key that outlives it
        (``lifetime_not_held``). Emits ``api_key.created``."""
        body = _opt(name=name, permissions=list(permissions), expires_at=expires_at)
        return self._one(APIKey, "POST", "/keys", body=body, idempotency_key=idempotency_key)

    def list_api_keys(
        self, *, limit: Optional[int] = None, after: Optional[str] = None, before: Optional[str] = None, order: Optional[str] = None
    ) -> Page[APIKey]:
        """One page of the account's API keys, revoked ones included
        (``GET /v1/keys``)."""
        return self._page(APIKey, "/keys", self._list_query(limit, after, before, order))

    def iter_api_keys(self, *, limit: Optional[int] = None, order: Optional[str] = None) -> Iterator[APIKey]:
        """Every API key, page after page."""
        return self._iter(APIKey, "/keys", self._list_query(limit, None, None, order))

    def get_api_key(self, key_id: str) -> APIKey:
        """``GET /v1/keys/{id}``: one key, without its secret."""
        return self._one(APIKey, "GET", "/keys/" + seg(key_id))

    def revoke_api_key(self, key_id: str, *, idempotency_key: Optional[str] = None) -> APIKey:
        """Revoke a key (``POST /v1/keys/{id}/revoke``): requests made with
        it are refused from now on; it stays listed as ``revoked``.
        Revoking it again changes nothing. Emits ``api_key.revoked``."""
        return self._one(APIKey, "POST", "/keys/%s/revoke" % seg(key_id), idempotency_key=idempotency_key)

    def create_oauth_client(
        self,
        name: str,
        redirect_uris: Sequence[str],
        *,
        public: bool = False,
        idempotency_key: Optional[str] = None,
    ) -> OAuthClient:
        """Register an OAuth 2.0 client (``POST /v1/oauth/clients``;
        permission ``admin``). A confidential client's ``client_secret`` is
        in this answer only; a public one has none and must use PKCE.
        Emits ``oauth_client.created``."""
        body = _opt(name=name, redirect_uris=list(redirect_uris), public=public)
        return self._one(OAuthClient, "POST", "/oauth/clients", body=body, idempotency_key=idempotency_key)

    def list_oauth_clients(
        self, *, limit: Optional[int] = None, after: Optional[str] = None, before: Optional[str] = None, order: Optional[str] = None
    ) -> Page[OAuthClient]:
        """One page of the account's OAuth clients (``GET /v1/oauth/clients``)."""
        return self._page(OAuthClient, "/oauth/clients", self._list_query(limit, after, before, order))

    def iter_oauth_clients(self, *, limit: Optional[int] = None, order: Optional[str] = None) -> Iterator[OAuthClient]:
        """Every OAuth client, page after page."""
        return self._iter(OAuthClient, "/oauth/clients", self._list_query(limit, None, None, order))

    def get_oauth_client(self, client_id: str) -> OAuthClient:
        """``GET /v1/oauth/clients/{id}``: one client, without its secret."""
        return self._one(OAuthClient, "GET", "/oauth/clients/" + seg(client_id))

    def rotate_oauth_client_secret(self, client_id: str, *, idempotency_key: Optional[str] = None) -> OAuthClient:
        """Give a confidential client a new ``client_secret``, in this
        answer only; the old one stops working (``POST
        /v1/oauth/clients/{id}/rotate_secret``). A public client is
        ``ConflictError`` ``public_client``. Emits
        ``oauth_client.secret_rotated``."""
        return self._one(OAuthClient, "POST", "/oauth/clients/%s/rotate_secret" % seg(client_id), idempotency_key=idempotency_key)

    def delete_oauth_client(self, client_id: str) -> None:
        """Delete a client and every token it holds (``DELETE
        /v1/oauth/clients/{id}``). Emits ``oauth_client.deleted``."""
        self.request("DELETE", "/oauth/clients/" + seg(client_id))

    def get_account(self) -> Account:
        """``GET /v1/account``: the account of the credential."""
        return self._one(Account, "GET", "/account")

    def update_account(
        self, *, timezone: Any = UNSET, key_reminders: Any = UNSET, webhook_failing: Any = UNSET
    ) -> Account:
        """Change the settings given (``PATCH /v1/account``): ``timezone``
        (an IANA name; another value is ``InvalidRequestError``
        ``parameter_invalid``), and the e-mail notifications
        ``key_reminders`` and ``webhook_failing`` (``True``/``False``).
        Emits ``account.updated`` when something changed."""
        body = _body(timezone=timezone)
        notify = _body(key_reminders=key_reminders, webhook_failing=webhook_failing)
        if notify:
            body["email_notifications"] = notify
        return self._one(Account, "PATCH", "/account", body=body)


# The class of each event a stream yields, by name.
_STREAM_EVENTS: Dict[str, Callable[..., MessageStreamEvent]] = {
    "turn.started": TurnStartedEvent,
    "tool_call": ToolCallEvent,
    "tool_result": ToolResultEvent,
    "message.delta": MessageDeltaEvent,
    "message.completed": MessageCompletedEvent,
}


def _read_sse(resp: Any) -> Iterator["tuple[str, str, str]"]:
    """Yield (event id, event name, data) of a text/event-stream."""
    name = ""
    eid = ""
    data: List[str] = []
    while True:
        line = resp.readline()
        if not line:
            return
        text = line.decode("utf-8").rstrip("\r\n")
        if text == "":
            if data or name:
                yield eid, name or "message", "\n".join(data)
            name, eid, data = "", "", []
            continue
        if text.startswith(":"):
            continue
        field, _, value = text.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            eid = value
