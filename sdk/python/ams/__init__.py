"""The Python SDK of ams, the Assistant Messaging Service.

>>> import ams
>>> client = ams.Client(api_key="ams_sk_...", base_url="http://127.0.0.1:8080")
>>> reply = client.send_message("ast_...", "Hello!")
>>> reply.content

Standard library only; Python 3.9+. See README.md.
"""

__version__ = "0.1.0"

from .client import DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, UNSET, Client, Metadata, MetadataUpdate  # noqa: E402
from .errors import (  # noqa: E402
    AmsError,
    APIConnectionError,
    APIError,
    AuthenticationError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    OAuthError,
    PermissionDeniedError,
    PermissionError_,
    RateLimitError,
    WebhookVerificationError,
)
from .oauth import SCOPES, OAuth, generate_pkce  # noqa: E402
from .types import (  # noqa: E402
    Account,
    Action,
    APIKey,
    ActionError,
    Assistant,
    AuthorizationRequest,
    CalendarEvent,
    CalendarFeed,
    Conversation,
    Event,
    Integration,
    Message,
    OAuthClient,
    OAuthToken,
    Page,
    StreamEvent,
    Turn,
    Task,
    Webhook,
    WebhookDelivery,
    WebhookRecovery,
    WebhookRedelivery,
    format_time,
    parse_time,
)
from .webhooks import (  # noqa: E402
    DEFAULT_TOLERANCE,
    compute_signature,
    compute_standard_signature,
    construct_event,
    verify_signature,
    verify_standard_webhook,
)

__all__ = [
    "__version__",
    "Client",
    "UNSET",
    "Metadata",
    "MetadataUpdate",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "AmsError",
    "APIConnectionError",
    "APIError",
    "AuthenticationError",
    "ConflictError",
    "InvalidRequestError",
    "NotFoundError",
    "OAuthError",
    "PermissionDeniedError",
    "PermissionError_",
    "RateLimitError",
    "WebhookVerificationError",
    "OAuth",
    "SCOPES",
    "generate_pkce",
    "Account",
    "Action",
    "ActionError",
    "APIKey",
    "Assistant",
    "AuthorizationRequest",
    "CalendarEvent",
    "CalendarFeed",
    "Conversation",
    "Event",
    "Integration",
    "Message",
    "OAuthClient",
    "OAuthToken",
    "Page",
    "StreamEvent",
    "Turn",
    "Task",
    "Webhook",
    "WebhookDelivery",
    "WebhookRecovery",
    "WebhookRedelivery",
    "format_time",
    "parse_time",
    "DEFAULT_TOLERANCE",
    "compute_signature",
    "compute_standard_signature",
    "construct_event",
    "verify_signature",
    "verify_standard_webhook",
]
