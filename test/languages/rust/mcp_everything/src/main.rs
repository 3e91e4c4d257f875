//! The client generated from test/fixtures/mcp/schemas, in Rust, against a real MCP server:
//! @modelcontextprotocol/server-everything over stdio (the command is the arguments). It
//! initializes, lists and calls tools, has the server sample through it and ask for its
//! roots, lists resources and pings; it prints what it saw as one JSON object, with every
//! frame the connection dropped or could not answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_protocol::jsonrpc::transport::spawn;
use mcp_protocol::types::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientCapabilitiesRoots,
    ContentBlock, CreateMessageRequestParams, CreateMessageResult, EmptyResult, Implementation,
    InitializeRequestParams, ListRootsRequestParams, ListRootsResult, NotificationParams,
    PaginatedRequestParams, PingRequestParams, Role, Root, SamplingContent, TextContent,
};
use mcp_protocol::{Client, ClientHandler, Error, Mode, Options, RpcError};

/// The requests the server sends, both answered (the trait requires them), and what was seen.
#[derive(Default)]
struct Handler {
    sampled: Mutex<Vec<String>>,
    roots_asked: AtomicUsize,
    tools_changed: AtomicUsize,
}

impl ClientHandler for Handler {
    async fn sampling_create_message(
        &self,
        params: CreateMessageRequestParams,
        _client: &Client,
    ) -> Result<CreateMessageResult, RpcError> {
        let kind = match params.messages.first().map(|m| &m.content) {
            Some(SamplingContent::Text(_)) => "text",
            Some(SamplingContent::Image(_)) => "image",
            Some(SamplingContent::Audio(_)) => "audio",
            None => "none",
        };
        self.sampled
            .lock()
            .expect("not poisoned")
            .push(kind.to_owned());
        Ok(CreateMessageResult {
            role: Role::Assistant,
            content: SamplingContent::Text(TextContent {
                text: "A sampled answer.".to_owned(),
                ..Default::default()
            }),
            model: "test-model".to_owned(),
            stop_reason: Some("endTurn".to_owned()),
            meta: None,
            extra: Default::default(),
        })
    }

    async fn roots_list(
        &self,
        _params: Option<ListRootsRequestParams>,
        _client: &Client,
    ) -> Result<ListRootsResult, RpcError> {
        self.roots_asked.fetch_add(1, Ordering::SeqCst);
        Ok(ListRootsResult {
            roots: vec![Root {
                uri: "file:///work/project".to_owned(),
                name: Some("project".to_owned()),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    async fn ping(
        &self,
        _params: Option<PingRequestParams>,
        _client: &Client,
    ) -> Result<EmptyResult, RpcError> {
        Ok(EmptyResult::default())
    }

    async fn on_notifications_tools_list_changed(
        &self,
        _params: Option<NotificationParams>,
        _client: &Client,
    ) {
        self.tools_changed.fetch_add(1, Ordering::SeqCst);
    }
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}

fn call(name: &str, arguments: serde_json::Value) -> CallToolRequestParams {
    CallToolRequestParams {
        name: name.to_owned(),
        arguments: arguments.as_object().cloned(),
        ..Default::default()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let command: Vec<String> = std::env::args().skip(1).collect();
    let (program, args) = command
        .split_first()
        .ok_or("give the server's command as arguments")?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (transport, _server) = spawn(program, &args)?;
    let dropped = Arc::new(Mutex::new(Vec::<String>::new()));
    let problems = Arc::clone(&dropped);
    let options = Options {
        mode: Mode::Tolerant,
        on_problem: Arc::new(move |problem: &str| {
            problems
                .lock()
                .expect("not poisoned")
                .push(problem.to_owned())
        }),
    };
    let handler = Arc::new(Handler::default());
    let client = Client::start_with(transport, Arc::clone(&handler), options);

    let init = client
        .initialize(&InitializeRequestParams {
            protocol_version: "2025-06-18".to_owned(),
            capabilities: ClientCapabilities {
                roots: Some(ClientCapabilitiesRoots {
                    list_changed: Some(true),
                    ..Default::default()
                }),
                sampling: Some(serde_json::Map::new()),
                ..Default::default()
            },
            client_info: Implementation {
                name: "turnspec-rust-mcp-test".to_owned(),
                version: "1.0.0".to_owned(),
                ..Default::default()
            },
            meta: None,
            extra: Default::default(),
        })
        .await?;
    client.notify_notifications_initialized(None)?;
    let tools = client.tools_list(None).await?;
    let echo = client
        .tools_call(&call(
            "echo",
            serde_json::json!({ "message": "hello from rust" }),
        ))
        .await?;
    let sum = client
        .tools_call(&call("get-sum", serde_json::json!({ "a": 2, "b": 40 })))
        .await?;
    let sampling = client
        .tools_call(&call(
            "trigger-sampling-request",
            serde_json::json!({ "prompt": "Say something", "maxTokens": 20 }),
        ))
        .await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let roots = client
        .tools_call(&call("get-roots-list", serde_json::json!({})))
        .await?;
    let unknown = client
        .tools_call(&call("no-such-tool", serde_json::json!({})))
        .await?;
    let resources = client
        .resources_list(Some(&PaginatedRequestParams::default()))
        .await?;
    let pong = client.ping(None).await?;
    // A member its schema does not declare: refused before it is sent.
    let mut undeclared = call("echo", serde_json::json!({ "message": "never sent" }));
    undeclared
        .extra
        .insert("undeclared".to_owned(), true.into());
    let refused = match client.tools_call(&undeclared).await {
        Err(Error::InvalidOutgoing(error)) => {
            format!("invalid_outgoing {}", error.pointers().join(" "))
        }
        Err(other) => format!("another error: {other}"),
        Ok(_) => "sent".to_owned(),
    };

    let mut names: Vec<&str> = tools.tools.iter().map(|tool| tool.name.as_str()).collect();
    names.sort_unstable();
    let seen = serde_json::json!({
        "server": init.server_info.name,
        "protocolVersion": init.protocol_version,
        "tools": names,
        "echo": text_of(&echo),
        "sum": text_of(&sum),
        "sampling": text_of(&sampling),
        "sampled": *handler.sampled.lock().expect("not poisoned"),
        "roots": text_of(&roots),
        "rootsAsked": handler.roots_asked.load(Ordering::SeqCst),
        "unknownIsError": unknown.is_error,
        "resources": resources.resources.len(),
        "ping": mcp_protocol::encode(&pong)?,
        "undeclared": refused,
        "dropped": *dropped.lock().expect("not poisoned"),
    });
    println!("{seen}");
    Ok(())
}
