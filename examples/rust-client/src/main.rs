//! Drives a gateway through one turn with the generated Rust client: starts it as a child
//! process (`turnspec serve --stdio --memory`, or the command in `TURNSPEC_STDIO_COMMAND`),
//! starts a thread and a supervised turn whose scripted model runs a shell command, allows
//! the command when the gateway asks, and prints the turn as it streams.
//!
//! ```text
//! cargo run -p rust-client
//! ```

use std::sync::Arc;
use std::time::Duration;

use agent_gateway::jsonrpc::transport::spawn;
use agent_gateway::types::{
    ItemDeltaNotification, ItemStartedNotification, ThreadStartParams, TurnCompletedNotification,
    TurnFailedNotification, TurnItem, TurnPermissionMode, TurnPermissionProfileSelection,
    TurnPermissionRequestOpenedNotification, TurnPermissionRequestRespondParams,
    TurnPermissionRequestRespondParamsResolution as Resolution, TurnStartParams, TurnStatus,
    UserInput, UserInputText,
};
use agent_gateway::{Client, ClientHandler};
use tokio::sync::mpsc;

/// Prints the turn's text and its commands' output, and allows each permission request once.
struct TurnPrinter {
    finished: mpsc::UnboundedSender<TurnStatus>,
}

impl ClientHandler for TurnPrinter {
    async fn on_item_started(&self, params: ItemStartedNotification, _client: &Client) {
        if let TurnItem::CommandExecution(item) = params.item {
            println!("[commandExecution: {}]", item.command);
        }
    }

    async fn on_turn_permission_request_opened(
        &self,
        params: TurnPermissionRequestOpenedNotification,
        client: &Client,
    ) {
        let request = params.request;
        println!("[approving {}: {}]", request.tool_name, request.reason);
        let answer = TurnPermissionRequestRespondParams {
            request_id: request.request_id,
            resolution: Resolution::AllowOnce,
            resolve_token: request.resolve_token,
            extra: Default::default(),
        };
        if let Err(error) = client.turn_permission_request_respond(&answer).await {
            eprintln!("the answer was refused: {error}");
        }
    }

    async fn on_item_command_execution_output_delta(
        &self,
        params: ItemDeltaNotification,
        _client: &Client,
    ) {
        print!("{}", params.delta);
    }

    async fn on_item_agent_message_delta(&self, params: ItemDeltaNotification, _client: &Client) {
        print!("{}", params.delta);
    }

    async fn on_turn_completed(&self, params: TurnCompletedNotification, _client: &Client) {
        let _ = self.finished.send(params.turn.status);
    }

    async fn on_turn_failed(&self, params: TurnFailedNotification, _client: &Client) {
        let _ = self.finished.send(params.turn.status);
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let command = std::env::var("TURNSPEC_STDIO_COMMAND")
        .unwrap_or_else(|_| "npx turnspec serve --stdio --memory".to_owned());
    let words: Vec<&str> = command.split_whitespace().collect();
    let (program, args) = words
        .split_first()
        .ok_or("TURNSPEC_STDIO_COMMAND is empty")?;
    let (transport, _gateway) = spawn(program, args)?;
    let (finished, mut status) = mpsc::unbounded_channel();
    let client = Client::start(transport, Arc::new(TurnPrinter { finished }));

    let started = client.thread_start(&ThreadStartParams::default()).await?;
    // The gateway's default model is scripted: this input is its script. A real model takes plain text.
    let script = serde_json::json!({
        "script": [
            { "tool": "shell", "args": { "command": "echo hello" } },
            { "say": "The command said hello.", "chunks": 3 }
        ]
    });
    let turn = TurnStartParams {
        thread_id: started.thread.id,
        turn_id: "trn_rust".to_owned(),
        input: vec![UserInput::Text(UserInputText {
            text: script.to_string(),
            ..Default::default()
        })],
        permission_profile: Some(TurnPermissionProfileSelection {
            mode: Some(TurnPermissionMode::Supervised),
            ..Default::default()
        }),
        ..Default::default()
    };
    client.turn_start(&turn).await?;
    let status = tokio::time::timeout(Duration::from_secs(60), status.recv())
        .await?
        .ok_or("the gateway closed the connection before the turn ended")?;
    println!("\n[{status:?}]");
    Ok(())
}
