//! The reference tools (shell, write_file, read_file), each call with its item and its
//! approval, relative to the thread's folder.

use std::path::{Component, Path, PathBuf};
use std::process::Stdio;

use agent_gateway::types::{
    ItemDeltaStream, PermissionActionKind, TurnItem, TurnItemCommandExecution, TurnItemFileChange,
    TurnItemFileChangeChangeKind, TurnItemStatus, TurnItemToolError, TurnItemToolOutcome,
};
use agent_gateway::Nullable;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use crate::model::ToolCall;
use crate::stamps::new_id;
use crate::turn::Run;

fn tool_error(message: String) -> Option<TurnItemToolError> {
    Some(TurnItemToolError {
        message,
        retryable: Some(false),
        extra: Default::default(),
    })
}

impl Run {
    /// Runs one tool call, with its item and its approval; returns what the model is told.
    pub async fn run_tool(&self, call: &ToolCall, cwd: &str, round: u64) -> String {
        let name = call.function.name.as_str();
        let args = match call.function.arguments.trim() {
            "" => serde_json::Map::new(),
            text => match serde_json::from_str::<serde_json::Value>(text) {
                Ok(serde_json::Value::Object(args)) => args,
                _ => return format!("error: the arguments of {name} are not a JSON object"),
            },
        };
        let text = |field: &str| args.get(field).and_then(|v| v.as_str()).map(str::to_owned);
        let id = new_id("item_");
        let summary = format!("{name} {}", call.function.arguments);
        match name {
            "shell" => {
                let command = text("command");
                let item = TurnItemCommandExecution {
                    round: Some(round),
                    tool_call_id: Some(call.id.clone()),
                    ..TurnItemCommandExecution::new(
                        id.clone(),
                        TurnItemStatus::InProgress,
                        command.clone().unwrap_or_default(),
                        cwd.to_owned(),
                        args.clone(),
                    )
                };
                if !self.permitted("shell", PermissionActionKind::ShellCommand, &args, &summary).await {
                    return self.declined(TurnItem::CommandExecution(item), &summary);
                }
                let Some(command) = command else {
                    let message = "shell: the command argument is missing".to_owned();
                    let failed = TurnItemCommandExecution {
                        status: TurnItemStatus::Failed,
                        error: tool_error(message.clone()),
                        outcome: Some(TurnItemToolOutcome::Error),
                        ..item.clone()
                    };
                    let _ = self.item(TurnItem::CommandExecution(item), TurnItem::CommandExecution(failed));
                    return format!("error: {message}");
                };
                if let Err(error) = self.item_started(TurnItem::CommandExecution(item.clone())) {
                    return format!("error: {error}");
                }
                let ran = self.shell(&id, &command, cwd).await;
                if self.turn.has_ended() {
                    return String::new();
                }
                let (done, told) = match ran {
                    Err(error) => (
                        TurnItemCommandExecution {
                            status: TurnItemStatus::Failed,
                            error: tool_error(error.to_string()),
                            outcome: Some(TurnItemToolOutcome::Error),
                            ..item
                        },
                        format!("error: {error}"),
                    ),
                    Ok((stdout, stderr, code)) => {
                        let ok = code == 0;
                        let told = if ok { stdout.clone() } else { format!("exit code {code}\n{stdout}{stderr}") };
                        (
                            TurnItemCommandExecution {
                                status: if ok { TurnItemStatus::Completed } else { TurnItemStatus::Failed },
                                outcome: Some(if ok { TurnItemToolOutcome::Success } else { TurnItemToolOutcome::Error }),
                                exit_code: Nullable::Value(code),
                                tool_result: ok.then(|| stdout.clone()),
                                stdout: Some(stdout),
                                stderr: Some(stderr),
                                ..item
                            },
                            told,
                        )
                    }
                };
                let _ = self.item_completed(TurnItem::CommandExecution(done));
                told
            }
            "write_file" => {
                let path = text("path").unwrap_or_default();
                let mut item = TurnItemFileChange {
                    round: Some(round),
                    tool_call_id: Some(call.id.clone()),
                    ..TurnItemFileChange::new(id, TurnItemStatus::InProgress, path.clone(), TurnItemFileChangeChangeKind::Add, args.clone())
                };
                if !self.permitted("write_file", PermissionActionKind::FileWrite, &args, &summary).await {
                    return self.declined(TurnItem::FileChange(item), &summary);
                }
                let written = match inside(cwd, &path) {
                    Err(error) => Err(error),
                    Ok(full) => {
                        if full.exists() {
                            item.change_kind = TurnItemFileChangeChangeKind::Modify;
                        }
                        let content = text("content").unwrap_or_default();
                        write(&full, &content).await.map_err(|e| e.to_string())
                    }
                };
                match written {
                    Err(error) => {
                        let failed = TurnItemFileChange {
                            status: TurnItemStatus::Failed,
                            error: tool_error(error.clone()),
                            outcome: Some(TurnItemToolOutcome::Error),
                            ..item.clone()
                        };
                        let _ = self.item(TurnItem::FileChange(item), TurnItem::FileChange(failed));
                        format!("error: {error}")
                    }
                    Ok(()) => {
                        let result = format!("wrote {path}");
                        let done = TurnItemFileChange {
                            status: TurnItemStatus::Completed,
                            outcome: Some(TurnItemToolOutcome::Success),
                            output: Some(result.clone()),
                            tool_result: Some(result.clone()),
                            ..item.clone()
                        };
                        let _ = self.item(TurnItem::FileChange(item), TurnItem::FileChange(done));
                        result
                    }
                }
            }
            "read_file" => {
                // A read is not a change: it has no item of its own.
                if !self.permitted("read_file", PermissionActionKind::FileRead, &args, &summary).await {
                    return format!("error: the user refused {summary}; it did not run");
                }
                let path = text("path").unwrap_or_default();
                match inside(cwd, &path) {
                    Err(error) => format!("error: {error}"),
                    Ok(full) => tokio::fs::read_to_string(&full).await.unwrap_or_else(|e| format!("error: {e}")),
                }
            }
            other => format!("error: there is no tool \"{other}\"; the tools are shell, write_file and read_file"),
        }
    }

    /// Ends the item of a call the client refused (started, then declined) and tells the model.
    fn declined(&self, item: TurnItem, summary: &str) -> String {
        if self.turn.has_ended() {
            return String::new();
        }
        let refusal = format!("the user refused {summary}; it did not run");
        let done = match &item {
            TurnItem::CommandExecution(it) => {
                TurnItem::CommandExecution(TurnItemCommandExecution {
                    status: TurnItemStatus::Declined,
                    outcome: Some(TurnItemToolOutcome::Declined),
                    tool_result: Some(refusal.clone()),
                    ..it.clone()
                })
            }
            TurnItem::FileChange(it) => TurnItem::FileChange(TurnItemFileChange {
                status: TurnItemStatus::Declined,
                outcome: Some(TurnItemToolOutcome::Declined),
                tool_result: Some(refusal.clone()),
                ..it.clone()
            }),
            other => other.clone(),
        };
        let _ = self.item(item, done);
        format!("error: {refusal}")
    }

    /// Runs a command with sh in `cwd`, its output sent as the item's deltas as it comes; the
    /// turn's end kills it. Returns stdout, stderr and the exit code.
    async fn shell(
        &self,
        id: &str,
        command: &str,
        cwd: &str,
    ) -> std::io::Result<(String, String, i64)> {
        let mut child = Command::new("sh")
            .args(["-c", command])
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| std::io::Error::other("no stderr"))?;
        let streamed = async {
            let (out, err) = tokio::join!(
                self.stream(id, stdout, ItemDeltaStream::Stdout),
                self.stream(id, stderr, ItemDeltaStream::Stderr)
            );
            let status = child.wait().await?;
            Ok::<_, std::io::Error>((out?, err?, status))
        };
        tokio::select! {
            done = streamed => {
                let (out, err, status) = done?;
                Ok((out, err, i64::from(status.code().unwrap_or(-1))))
            }
            () = self.turn.cancelled() => Err(std::io::Error::other("the turn ended")),
        }
    }

    /// Reads a stream to its end, sending each piece as a delta; a delta never splits a
    /// character, so that the deltas join up to the output.
    async fn stream(
        &self,
        id: &str,
        mut reader: impl AsyncRead + Unpin,
        kind: ItemDeltaStream,
    ) -> std::io::Result<String> {
        let mut all = Vec::new();
        let mut held = Vec::new();
        let mut buffer = vec![0u8; 32 * 1024];
        loop {
            let n = reader.read(&mut buffer).await?;
            held.extend_from_slice(&buffer[..n]);
            let cut = if n == 0 {
                held.len()
            } else {
                complete_characters(&held)
            };
            if cut > 0 {
                let piece: Vec<u8> = held.drain(..cut).collect();
                let _ = self.delta(id, kind, &String::from_utf8_lossy(&piece));
                all.extend_from_slice(&piece);
            }
            if n == 0 {
                return Ok(String::from_utf8_lossy(&all).into_owned());
            }
        }
    }
}

/// How much of `bytes` ends on a character boundary.
fn complete_characters(bytes: &[u8]) -> usize {
    for back in 1..=4.min(bytes.len()) {
        let start = bytes.len() - back;
        let byte = bytes[start];
        if byte & 0xc0 == 0x80 {
            continue;
        }
        let width = match byte {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            _ => 4,
        };
        return if back >= width { bytes.len() } else { start };
    }
    bytes.len()
}

/// `path` within the thread's folder, or why not.
fn inside(folder: &str, path: &str) -> Result<PathBuf, String> {
    let relative = Path::new(path);
    if path.is_empty()
        || relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(format!("{path} is outside the thread's folder"));
    }
    Ok(Path::new(folder).join(relative))
}

async fn write(full: &Path, content: &str) -> std::io::Result<()> {
    if let Some(parent) = full.parent() {
        tokio::fs::create_dir_all(parent).await?;
    }
    tokio::fs::write(full, content).await
}
