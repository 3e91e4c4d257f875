# One client on stdin/stdout, one JSON message per line; the event log in memory.
npx turnspec serve --stdio --memory
# WebSocket on 127.0.0.1 on a free port; prints the URL and a generated token.
npx turnspec serve --port 0
# A token of your choosing (or TURNSPEC_TOKEN=s3cret); --no-auth turns authentication off, explicitly.
npx turnspec serve --port 0 --token s3cret
# An OpenAI-compatible model server as the default provider, and the event log in a SQLite file of its own.
npx turnspec serve --port 0 --provider-url http://127.0.0.1:8080/v1 --db .turnspec/other.sqlite
# Providers, tools, limits and permissions from a configuration file.
npx turnspec serve --port 0 --config examples/gateway/config.json
