"""Quick start: send a message, continue the conversation, read the history,
stream a reply, handle an error.

    ams serve --dev          # prints an API key and an assistant id
    export AMS_API_KEY=ams_sk_...  AMS_ASSISTANT_ID=ast_...
    python3 examples/quickstart.py

AMS_BASE_URL defaults to http://127.0.0.1:8080.
"""

import os

import ams

client = ams.Client()  # api_key from $AMS_API_KEY, base_url from $AMS_BASE_URL
assistant_id = os.environ["AMS_ASSISTANT_ID"]

# Send a message: the answer is the assistant's reply.
reply = client.send_message(assistant_id, "Hello! My name is Ada.")
print("assistant:", reply.content)

# Continue the same conversation: the assistant keeps context.
reply = client.send_message(assistant_id, "What's my name?", conversation_id=reply.conversation_id)
print("assistant:", reply.content)

# Read the history, oldest first (iter_... follows the pages for you).
for m in client.iter_conversation_messages(reply.conversation_id, order="asc"):
    print("  %-8s %s" % (m.direction, m.content.splitlines()[0]))

# Stream a reply as it is produced.
print("streamed: ", end="")
for event in client.send_message_stream(assistant_id, "Remind me to call Ana tomorrow at 9"):
    if event.type == "message.delta":
        print(event.delta, end="", flush=True)
    elif event.type == "tool_result":
        print("[%s: %s] " % (event.action.type, event.action.status), end="")
    elif event.type == "message.completed":
        print("\nstored as", event.message.id)

# Errors are typed; match on code, never on the message.
try:
    client.get_message("msg_doesnotexist")
except ams.NotFoundError as e:
    print("not found:", e.code, "request", e.request_id)
