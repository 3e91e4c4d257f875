//! Transports: how frames travel. A [`Transport`] is a pair of channels, frames received and
//! frames to send, each frame one JSON text; tasks started here move them over standard
//! input and output, a child process's pipes, a WebSocket, or memory.

use std::io;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// The largest frame a line transport reads, in bytes; a longer line is dropped whole.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Frames in and out. The connection ends when `incoming` ends; dropping `outgoing` closes
/// the sending side.
#[derive(Debug)]
pub struct Transport {
    /// The frames received, in order.
    pub incoming: mpsc::UnboundedReceiver<String>,
    /// Where frames to send go.
    pub outgoing: mpsc::UnboundedSender<String>,
}

/// Two transports joined to each other in memory: what one sends, the other receives.
pub fn memory_pair() -> (Transport, Transport) {
    let (a_out, b_in) = mpsc::unbounded_channel();
    let (b_out, a_in) = mpsc::unbounded_channel();
    (
        Transport {
            incoming: a_in,
            outgoing: a_out,
        },
        Transport {
            incoming: b_in,
            outgoing: b_out,
        },
    )
}

/// One frame per line over a reader and a writer (newline-delimited JSON).
pub fn lines<R, W>(reader: R, writer: W) -> Transport
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (in_tx, incoming) = mpsc::unbounded_channel();
    let (outgoing, mut out_rx) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line(&mut reader, &mut line).await {
                Ok(None) | Err(_) => break,
                Ok(Some(false)) => {
                    eprintln!("jsonrpc: dropped an incoming frame over {MAX_FRAME_BYTES} bytes");
                }
                Ok(Some(true)) => {
                    let text = String::from_utf8_lossy(&line);
                    let frame = text.trim_end_matches(['\n', '\r']);
                    if !frame.trim().is_empty() && in_tx.send(frame.to_owned()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    tokio::spawn(async move {
        let mut writer = writer;
        while let Some(frame) = out_rx.recv().await {
            let written = async {
                writer.write_all(frame.as_bytes()).await?;
                writer.write_all(b"\n").await?;
                writer.flush().await
            };
            if written.await.is_err() {
                break;
            }
        }
        let _ = writer.shutdown().await;
    });
    Transport { incoming, outgoing }
}

/// Reads one line into `line`: `None` at the end of input, `Some(false)` for a line over
/// the limit (dropped), `Some(true)` for a line read.
async fn read_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> io::Result<Option<bool>> {
    let mut over = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(if line.is_empty() && !over {
                None
            } else {
                Some(!over)
            });
        }
        let (taken, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buffer.len(), false),
        };
        if !over {
            if line.len() + taken > MAX_FRAME_BYTES + 1 {
                over = true;
                line.clear();
            } else {
                line.extend_from_slice(&buffer[..taken]);
            }
        }
        reader.consume(taken);
        if done {
            return Ok(Some(!over));
        }
    }
}

/// This process's standard input and output, one frame per line. Nothing else may be
/// written to standard output.
pub fn stdio() -> Transport {
    lines(tokio::io::stdin(), tokio::io::stdout())
}

/// A child process speaking one frame per line on its standard input and output (its
/// standard error is this process's). The child is killed when the returned handle drops.
pub fn spawn(program: &str, args: &[&str]) -> io::Result<(Transport, Child)> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("the child has no standard input"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("the child has no standard output"))?;
    Ok((lines(stdout, stdin), child))
}
