"""Permission profiles and approval requests.

A turn runs under a mode: ``full_access`` (the default) lets every tool run; ``supervised``
allows file reads and asks before file writes, shell commands and network access;
``auto_accept_edits`` also allows file writes. An action the policy asks about opens an
approval request and waits for the client's answer: ``allow_once`` lets that call run,
``allow_for_turn`` also every later call of the turn with the same scope (the same tool with
the same arguments), ``deny`` refuses it. Requests and their resolutions, and grants used, are
recorded as ``turn/permission/audit`` events of the turn.

Each request carries a resolve token, an HMAC over the request, turn and thread ids under a
key this process made up; an answer must carry it back unchanged.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from pydantic import JsonValue

from agent_gateway import models
from agent_gateway._wire import canonical_json

from .clock import now_iso
from .errors import protocol_error
from .tools import ToolSpec
from .turn_stream import TurnStream


def _policy(file_write: models.PermissionBehavior, shell: models.PermissionBehavior, network: models.PermissionBehavior) -> models.ToolPermissionPolicySnapshot:
    # This gateway has no MCP, skill, computer-use or sub-agent tools: what it would do with them is asked or refused.
    return models.ToolPermissionPolicySnapshot(
        default_behavior="ask",
        file_read="allow",
        file_write=file_write,
        shell_command=shell,
        network=network,
        mcp_read="ask",
        mcp_write_or_unknown="ask",
        dynamic_skill_tool="deny",
        computer_use="deny",
        task_subagent="deny",
    )


POLICIES: Final[Mapping[models.TurnPermissionMode, models.ToolPermissionPolicySnapshot]] = {
    "full_access": models.ToolPermissionPolicySnapshot(
        default_behavior="allow",
        file_read="allow",
        file_write="allow",
        shell_command="allow",
        network="allow",
        mcp_read="allow",
        mcp_write_or_unknown="allow",
        dynamic_skill_tool="allow",
        computer_use="allow",
        task_subagent="allow",
    ),
    "auto_accept_edits": _policy("allow", "ask", "ask"),
    "supervised": _policy("ask", "ask", "ask"),
}


def settle_profile(selection: models.TurnPermissionProfileSelection | None) -> models.TurnPermissionProfileSnapshot:
    """The profile a turn runs under; refuses the refinements this gateway does not serve."""
    if selection is not None:
        for name in ("allowed_tools", "denied_tools", "allowed_paths"):
            if name in selection.model_fields_set:
                raise protocol_error("invalid_params", f"turn/start: permission_profile.{name} is not served by this gateway", field=f"permission_profile.{name}")
    mode = selection.mode if selection is not None else None
    return models.TurnPermissionProfileSnapshot(
        mode=mode or "full_access",
        source="composer" if mode is not None else "defaulted",
        effective_policy=POLICIES[mode or "full_access"].model_copy(deep=True),
    )


def scope_hash(tool: str, args: Mapping[str, JsonValue]) -> str:
    """The scope of a call: its tool and its arguments, hashed in canonical JSON."""
    return hashlib.sha256(canonical_json([tool, dict(args)]).encode("utf-8")).hexdigest()


@dataclass
class Approval:
    """One approval request and, once it has one, its resolution."""

    request: models.TurnPermissionApprovalRequest
    gate: PermissionGate
    answered: asyncio.Future[models.TurnPermissionApprovalResolution]
    resolution: models.TurnPermissionApprovalResolution | None = None
    resolved_at: str | None = None


class ApprovalRegistry:
    """Every approval request of the gateway, by id: turns open them, clients answer them."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)
        self._requests: dict[str, Approval] = {}

    def token(self, request_id: str, turn_id: str, thread_id: str) -> str:
        mac = hmac.new(self._key, canonical_json([request_id, turn_id, thread_id]).encode("utf-8"), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode("ascii").rstrip("=")

    def add(self, approval: Approval) -> None:
        self._requests[approval.request.request_id] = approval

    async def respond(self, params: models.TurnPermissionRequestRespondParams) -> models.TurnPermissionRequestRespondResponse:
        """A client's answer: checked (the request, its token, that it is still open, the scope), then recorded."""
        approval = self._requests.get(params.request_id)
        if approval is None:
            raise protocol_error("permission_request_not_found", f"there is no approval request {params.request_id}", request_id=params.request_id)
        request = approval.request
        expected = self.token(request.request_id, request.turn_id, request.thread_id)
        if params.resolve_token is None or not hmac.compare_digest(params.resolve_token, expected):
            what = "carries no resolve_token" if params.resolve_token is None else "carries a resolve_token that is not the request's"
            raise protocol_error("unauthorized", f"the answer to approval request {request.request_id} {what}", request_id=request.request_id)
        if approval.resolution is not None:
            raise protocol_error(
                "permission_request_resolved", f"approval request {request.request_id} was already resolved {approval.resolution}", request_id=request.request_id, resolution=approval.resolution
            )
        if params.resolution != "deny" and params.resolution not in request.allowed_scopes:
            raise protocol_error("invalid_params", f"approval request {request.request_id} may be allowed {' or '.join(request.allowed_scopes)}, not {params.resolution}", field="resolution")
        resolved_at = await approval.gate.resolve(approval, params.resolution)
        return models.TurnPermissionRequestRespondResponse(
            request_id=request.request_id, thread_id=request.thread_id, turn_id=request.turn_id, resolution=params.resolution, resolved_at=resolved_at
        )


@dataclass(frozen=True)
class Decision:
    allowed: bool
    refusal: str = ""
    """Why the call may not run, for the model."""


@dataclass
class PermissionGate:
    """One turn's side of the permissions: its profile, its grants and its open requests."""

    registry: ApprovalRegistry
    stream: TurnStream
    workspace_id: str
    profile: models.TurnPermissionProfileSnapshot
    grants: set[str] = field(default_factory=set[str])
    """Scope hashes granted allow_for_turn; they end with the turn."""
    open: list[Approval] = field(default_factory=list[Approval])

    async def authorize(self, tool: ToolSpec, args: Mapping[str, JsonValue], *, item_id: str | None) -> Decision:
        """Whether the call may run: by the policy, by a grant of this turn, or by the client's answer to a request opened here."""
        policy = self.profile.effective_policy
        # The policy has a field per action kind; an action of no kind ("unknown") gets the default.
        behavior: models.PermissionBehavior = getattr(policy, tool.action) if tool.action in type(policy).model_fields else policy.default_behavior
        scope = scope_hash(tool.name, args)
        if behavior == "allow":
            return Decision(True)
        if behavior == "deny":
            await self.stream.audit("decision_denied", tool_name=tool.name, action=tool.action, scope_hash=scope, behavior=behavior, decided_by="policy")
            return Decision(False, f"the {self.profile.mode} profile does not allow {tool.action.replace('_', ' ')}; {tool.name} did not run")
        if scope in self.grants:
            await self.stream.audit("decision_allowed", tool_name=tool.name, action=tool.action, scope_hash=scope, behavior=behavior, decided_by="turn_grant")
            return Decision(True)
        resolution = await self._ask(tool, args, scope, item_id)
        if resolution in ("allow_once", "allow_for_turn"):
            return Decision(True)
        return Decision(False, f"the user answered {resolution} to running {tool.name} {canonical_json(dict(args))}; it did not run")

    async def _ask(self, tool: ToolSpec, args: Mapping[str, JsonValue], scope: str, item_id: str | None) -> models.TurnPermissionApprovalResolution:
        request_id = f"perm_{uuid.uuid4().hex}"
        stream = self.stream
        request = models.TurnPermissionApprovalRequest(
            request_id=request_id,
            workspace_id=self.workspace_id,
            thread_id=stream.thread_id,
            turn_id=stream.turn_id,
            tool_name=tool.name,
            action=tool.action,
            scope_hash=scope,
            reason=f"the {self.profile.mode} profile asks before {tool.action.replace('_', ' ')}",
            args_json=canonical_json(dict(args)),
            summary=f"{tool.name} {canonical_json(dict(args))}",
            details={"arguments": dict(args)},
            allowed_scopes=["allow_once", "allow_for_turn"],
            item_id=item_id,
            created_at=now_iso(),
            resolve_token=self.registry.token(request_id, stream.turn_id, stream.thread_id),
        )
        approval = Approval(request, self, asyncio.get_running_loop().create_future())
        self.registry.add(approval)
        self.open.append(approval)
        await stream.permission_opened(request)
        await stream.audit("request_opened", tool_name=tool.name, action=tool.action, scope_hash=scope, behavior="ask", request_id=request_id, reason=request.reason)
        return await approval.answered

    async def resolve(self, approval: Approval, resolution: models.TurnPermissionApprovalResolution) -> str:
        """Resolves a request once: its resolution and audit record, then the waiting call goes on. Returns when it was resolved."""
        if approval.resolved_at is not None:
            return approval.resolved_at
        approval.resolution = resolution
        approval.resolved_at = resolved_at = now_iso()
        self.open.remove(approval)
        request = approval.request
        if resolution == "allow_for_turn":
            self.grants.add(request.scope_hash)
        await self.stream.permission_resolved(request, resolution, resolved_at)
        await self.stream.audit(
            "request_resolved",
            tool_name=request.tool_name,
            action=request.action,
            scope_hash=request.scope_hash,
            request_id=request.request_id,
            decided_by="resolution",
            resolution=resolution,
        )
        if not approval.answered.done():
            approval.answered.set_result(resolution)
        return resolved_at

    async def cancel_open(self) -> None:
        """Resolves every request still open as cancelled (the turn is ending)."""
        for approval in list(self.open):
            await self.resolve(approval, "cancelled")
