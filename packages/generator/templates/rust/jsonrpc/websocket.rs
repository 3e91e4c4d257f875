//! WebSocket transports: one frame per text message, as a client ([`connect`]) or a server
//! ([`accept`]), with an optional bearer token.
//!
//! tungstenite's state machine (re-exported by tokio-tungstenite) runs over in-memory
//! buffers that one task fills from and drains to the TCP stream: its async stream type
//! would need the futures crates, which this crate does not depend on.

use std::collections::VecDeque;
use std::io::{self, Read, Write};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::handshake::{HandshakeError, HandshakeRole, MidHandshake};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::{ClientHandshake, Message, ServerHandshake, WebSocket};

use super::transport::Transport;

/// The bytes between tungstenite and the socket: what came in and is not read yet, and
/// what is written and not sent yet.
#[derive(Debug, Default)]
struct Buffers {
    input: VecDeque<u8>,
    output: Vec<u8>,
    ended: bool,
}

impl Read for Buffers {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.input.is_empty() {
            return if self.ended {
                Ok(0)
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            };
        }
        self.input.read(buf)
    }
}

impl Write for Buffers {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn failed(error: impl std::fmt::Display) -> io::Error {
    io::Error::other(error.to_string())
}

/// Runs a handshake to its end, feeding it what the socket brings.
async fn handshake<R>(
    socket: &mut TcpStream,
    mut mid: MidHandshake<R>,
) -> io::Result<R::FinalResult>
where
    R: HandshakeRole<InternalStream = Buffers>,
{
    let mut chunk = vec![0u8; 8192];
    loop {
        let output = std::mem::take(&mut mid.get_mut().get_mut().output);
        socket.write_all(&output).await?;
        match mid.handshake() {
            Ok(done) => return Ok(done),
            Err(HandshakeError::Failure(error)) => return Err(failed(error)),
            Err(HandshakeError::Interrupted(next)) => mid = next,
        }
        let output = std::mem::take(&mut mid.get_mut().get_mut().output);
        socket.write_all(&output).await?;
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed the connection during the WebSocket handshake",
            ));
        }
        mid.get_mut().get_mut().input.extend(&chunk[..n]);
    }
}

/// Connects to a WebSocket server (`ws://` only), sending `Authorization: Bearer <token>`
/// when a token is given.
pub async fn connect(url: &str, token: Option<&str>) -> io::Result<Transport> {
    let mut request = url.into_client_request().map_err(failed)?;
    if request.uri().scheme_str() != Some("ws") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{url}: only ws:// URLs are served (no TLS)"),
        ));
    }
    if let Some(token) = token {
        let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(failed)?;
        request.headers_mut().insert("Authorization", value);
    }
    let host = request
        .uri()
        .host()
        .unwrap_or("localhost")
        .trim_matches(['[', ']'])
        .to_owned();
    let port = request.uri().port_u16().unwrap_or(80);
    let mut socket = TcpStream::connect((host.as_str(), port)).await?;
    socket.set_nodelay(true)?;
    let mid = ClientHandshake::start(Buffers::default(), request, None).map_err(failed)?;
    let (websocket, _response) = handshake(&mut socket, mid).await?;
    Ok(run(socket, websocket))
}

/// Takes a connection a server accepted through the WebSocket upgrade; with a token, the
/// request must carry `Authorization: Bearer <token>` (or `?token=<token>`), else it is
/// answered 401.
pub async fn accept(mut socket: TcpStream, token: Option<String>) -> io::Result<Transport> {
    socket.set_nodelay(true)?;
    // The signature is tungstenite's handshake callback's.
    #[allow(clippy::result_large_err)]
    let check = move |request: &Request, response: Response| -> Result<Response, ErrorResponse> {
        let Some(token) = token else {
            return Ok(response);
        };
        let header = request
            .headers()
            .get("Authorization")
            .and_then(|v| v.to_str().ok());
        let query = request.uri().query().unwrap_or_default();
        let presented = header
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::to_owned)
            .or_else(|| {
                query
                    .split('&')
                    .find_map(|pair| pair.strip_prefix("token=").map(str::to_owned))
            });
        if presented.as_deref() == Some(token.as_str()) {
            Ok(response)
        } else {
            let mut refused =
                ErrorResponse::new(Some("a valid bearer token is required".to_owned()));
            *refused.status_mut() = StatusCode::UNAUTHORIZED;
            Err(refused)
        }
    };
    let mid = ServerHandshake::start(Buffers::default(), check, None);
    let websocket = handshake(&mut socket, mid).await?;
    Ok(run(socket, websocket))
}

/// Moves frames between the channels and the socket until either side ends.
fn run(mut socket: TcpStream, mut websocket: WebSocket<Buffers>) -> Transport {
    let (in_tx, incoming) = mpsc::unbounded_channel();
    let (outgoing, mut out_rx) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut chunk = vec![0u8; 64 * 1024];
        let mut sending = true;
        loop {
            let output = std::mem::take(&mut websocket.get_mut().output);
            if socket.write_all(&output).await.is_err() {
                break;
            }
            tokio::select! {
                read = socket.read(&mut chunk) => {
                    match read {
                        Ok(0) | Err(_) => websocket.get_mut().ended = true,
                        Ok(n) => websocket.get_mut().input.extend(&chunk[..n]),
                    }
                    if !deliver(&mut websocket, &in_tx) {
                        let output = std::mem::take(&mut websocket.get_mut().output);
                        let _ = socket.write_all(&output).await;
                        break;
                    }
                }
                frame = out_rx.recv(), if sending => match frame {
                    Some(frame) => {
                        if websocket.send(Message::text(frame)).is_err() {
                            break;
                        }
                    }
                    None => {
                        sending = false;
                        let _ = websocket.close(None);
                        let _ = websocket.flush();
                    }
                },
            }
        }
        let _ = socket.shutdown().await;
    });
    Transport { incoming, outgoing }
}

/// Reads every complete message the buffers hold; false once the connection is over.
fn deliver(websocket: &mut WebSocket<Buffers>, incoming: &mpsc::UnboundedSender<String>) -> bool {
    loop {
        match websocket.read() {
            Ok(Message::Text(text)) => {
                let _ = incoming.send(text.as_str().to_owned());
            }
            Ok(Message::Binary(bytes)) => {
                let _ = incoming.send(String::from_utf8_lossy(&bytes).into_owned());
            }
            Ok(_) => {}
            Err(tokio_tungstenite::tungstenite::Error::Io(error))
                if error.kind() == io::ErrorKind::WouldBlock =>
            {
                // Pongs and close replies that reading queued go out with the next write.
                let _ = websocket.flush();
                return !websocket.get_ref().ended;
            }
            Err(_) => return false,
        }
    }
}
