//! The model: one OpenAI-compatible chat completion call at a time, over plain HTTP/1.1 (the
//! provider URL is `http://host:port/...`, as the certification suite's scripted model
//! serves it).

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One call of a tool the model asks for.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".to_owned()
}

/// The tool and its arguments (a JSON object as text).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    #[serde(default)]
    pub arguments: String,
}

/// A message of the conversation the model is given.
#[derive(Clone, Debug, Serialize)]
pub struct ChatMessage {
    pub role: &'static str,
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    pub fn text(role: &'static str, content: &str) -> ChatMessage {
        ChatMessage {
            role,
            content: Some(content.to_owned()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// What a chat completion call answers.
#[derive(Debug, Deserialize)]
pub struct Completion {
    #[serde(default)]
    pub choices: Vec<Choice>,
    pub usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
pub struct Choice {
    pub message: AnswerMessage,
}

/// The model's message: its text, its reasoning, the tools it calls.
#[derive(Debug, Deserialize)]
pub struct AnswerMessage {
    pub content: Option<String>,
    #[serde(default)]
    pub reasoning_content: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
}

#[derive(Debug, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
}

/// A model call that failed: the turn fails with `provider_error`.
#[derive(Debug)]
pub struct ProviderError(pub String);

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The reference tools, as the model is offered them (docs/certify-contract.md).
fn tools() -> serde_json::Value {
    let tool = |name: &str, description: &str, params: &[&str]| {
        let properties: serde_json::Map<String, serde_json::Value> = params
            .iter()
            .map(|p| ((*p).to_owned(), serde_json::json!({ "type": "string" })))
            .collect();
        serde_json::json!({
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": { "type": "object", "properties": properties, "required": params },
            },
        })
    };
    serde_json::json!([
        tool(
            "shell",
            "Runs a shell command in the thread's folder.",
            &["command"]
        ),
        tool(
            "write_file",
            "Writes a file in the thread's folder.",
            &["path", "content"]
        ),
        tool(
            "read_file",
            "Reads a file in the thread's folder.",
            &["path"]
        ),
    ])
}

/// Where the model is: `http://host:port/prefix`.
#[derive(Clone, Debug)]
pub struct Provider {
    host: String,
    port: u16,
    prefix: String,
}

impl Provider {
    /// Reads the provider's URL; only `http://` is served.
    pub fn parse(url: &str) -> Result<Provider, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: only http:// provider URLs are served"))?;
        let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) => (
                host,
                port.parse()
                    .map_err(|_| format!("{url}: the port is not a number"))?,
            ),
            None => (authority, 80),
        };
        Ok(Provider {
            host: host.to_owned(),
            port,
            prefix: format!("/{}", path.trim_end_matches('/')),
        })
    }

    /// One chat completion call, not streamed.
    pub async fn complete(
        &self,
        model: &str,
        messages: &[ChatMessage],
        with_tools: bool,
    ) -> Result<Completion, ProviderError> {
        let mut body = serde_json::json!({ "model": model, "messages": messages });
        if with_tools {
            body["tools"] = tools();
        }
        let body = body.to_string();
        let path = format!("{}/chat/completions", self.prefix.trim_end_matches('/'));
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.host,
            self.port,
            body.len()
        );
        let unreachable =
            |e: std::io::Error| ProviderError(format!("the model could not be reached: {e}"));
        let mut socket = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(unreachable)?;
        socket
            .write_all(request.as_bytes())
            .await
            .map_err(unreachable)?;
        let mut raw = Vec::new();
        socket.read_to_end(&mut raw).await.map_err(unreachable)?;
        let (status, text) = response_body(&raw)
            .ok_or_else(|| ProviderError("the model's answer is not HTTP".to_owned()))?;
        if !(200..300).contains(&status) {
            return Err(ProviderError(format!(
                "the model answered HTTP {status}: {text}"
            )));
        }
        serde_json::from_str(&text)
            .map_err(|e| ProviderError(format!("the model's answer is not a chat completion: {e}")))
    }
}

/// The status and body of an HTTP/1.1 response read to its end (chunked or not).
fn response_body(raw: &[u8]) -> Option<(u16, String)> {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let mut body = &raw[split + 4..];
    let chunked = head
        .lines()
        .any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"));
    if !chunked {
        return Some((status, String::from_utf8_lossy(body).into_owned()));
    }
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n")?;
        let size_text = String::from_utf8_lossy(&body[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        body = &body[line_end + 2..];
        if size == 0 {
            break;
        }
        out.extend_from_slice(body.get(..size)?);
        body = body.get(size + 2..)?;
    }
    Some((status, String::from_utf8_lossy(&out).into_owned()))
}
