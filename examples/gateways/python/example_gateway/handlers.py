"""The gateway's answer to every request of the protocol: an object with a method per request,
which the generated ``ServerConnection`` takes as its ``ServerHandlers`` (a method missing here
is a type error there). Params arrive decoded and checked strictly; what is returned is checked
before it is sent.

It claims the core and permissions capabilities. The methods of the others (work projections,
delegation routes, questions) answer method_not_found, which is the truth.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NoReturn, cast

from pydantic import JsonValue

from agent_gateway import models
from agent_gateway._wire import to_wire
from agent_gateway.server import ServerConnection

from .clock import now_iso
from .errors import protocol_error
from .permissions import ApprovalRegistry, settle_profile
from .provider import ChatModel
from .store import Store
from .turns import TurnRun

DEFAULT_WORKSPACE: Final = "ws_default"
TIMELINE_PAGE: Final = 50


@dataclass(frozen=True)
class GatewayOptions:
    chat: ChatModel
    """The model every turn talks to."""
    provider: str
    """The name this gateway gives its model provider (the one execution backend it serves)."""
    model: str
    """The model a thread uses when it names none."""


def _not_served(method: str) -> NoReturn:
    raise protocol_error("method_not_found", f"{method} is not served by this gateway", method=method)


def _refuse_unserved(params: models.TurnStartParams) -> None:
    """Refuses what turn/start asks for that this gateway does not do, naming it: a field accepted and ignored would mislead the client."""
    # sandbox_policy needs no refusal: its one value, FullAccess, is how this gateway runs every command.
    if "cli_runtime_options" in params.model_fields_set:
        raise protocol_error("invalid_params", "turn/start: cli_runtime_options is not served by this gateway: it runs no CLI agent runtime", field="cli_runtime_options")
    for index, part in enumerate(params.input):
        if not isinstance(part, models.UserInputText):
            raise protocol_error("invalid_params", f"turn/start: input/{index} is of type {part.type}; this gateway takes text input only", pointer=f"/input/{index}")


class GatewayHandlers:
    def __init__(self, options: GatewayOptions) -> None:
        self._options = options
        self._store = Store()
        self._approvals = ApprovalRegistry()

    async def shutdown(self) -> None:
        """Stops the turns still running (and the commands they run): the client is gone."""
        await asyncio.gather(*(run.cancel("the gateway is shutting down") for run in self._store.running()))

    # Threads.

    async def thread_start(self, params: models.ThreadStartParams, connection: ServerConnection) -> models.ThreadStartResponse:
        if params.model_provider is not None and params.model_provider != self._options.provider:
            raise protocol_error("invalid_params", f"thread/start: model_provider {params.model_provider} is not served; this gateway serves {self._options.provider}", field="model_provider")
        cwd = Path(params.cwd if params.cwd is not None else os.getcwd()).resolve()
        if not cwd.is_dir():
            raise protocol_error("invalid_params", f"thread/start: cwd {params.cwd} is not a folder on the gateway's host", field="cwd")
        thread = models.Thread(
            id=f"thr_{uuid.uuid4().hex}",
            workspace_id=params.workspace_id or DEFAULT_WORKSPACE,
            cwd=str(cwd),
            model_provider=self._options.provider,
            model=params.model or self._options.model,
            mode=params.mode or "Chat",
            created_at=now_iso(),
        )
        self._store.add_thread(thread)
        return models.ThreadStartResponse(thread=thread.model_copy(deep=True))

    async def thread_get(self, params: models.ThreadGetParams, connection: ServerConnection) -> models.ThreadGetResponse:
        return models.ThreadGetResponse(thread=self._store.thread(params.thread_id).thread.model_copy(deep=True))

    async def thread_timeline_page(self, params: models.ThreadTimelinePageParams, connection: ServerConnection) -> models.ThreadTimelinePageResponse:
        """The newest blocks first; a cursor walks towards older ones. Within a page, oldest first."""
        runs = self._store.thread(params.threadId).turns
        end = len(runs)
        if params.cursor is not None:
            if not params.cursor.isdigit() or not 0 <= int(params.cursor) <= len(runs):
                raise protocol_error("invalid_params", f"thread/timeline/page: cursor {params.cursor!r} is not one this gateway gave out", field="cursor")
            end = int(params.cursor)
        start = max(0, end - (params.limit or TIMELINE_PAGE))
        page = models.ThreadTimelinePageResponsePage(nextCursor=str(start) if start > 0 else None, hasMore=start > 0)
        return models.ThreadTimelinePageResponse(threadId=params.threadId, blocks=[run.block() for run in runs[start:end]], page=page)

    # Turns.

    async def turn_start(self, params: models.TurnStartParams, connection: ServerConnection) -> models.TurnStartResponse:
        record = self._store.thread(params.thread_id)
        thread = record.thread
        if self._store.turn_id_used(params.turn_id):
            raise protocol_error("duplicate_turn_id", f"turn id {params.turn_id} is already used", turn_id=params.turn_id)
        if thread.active_turn_id is not None:
            raise protocol_error("turn_in_progress", f"thread {thread.id} is running turn {thread.active_turn_id}", active_turn_id=thread.active_turn_id)
        self._refuse_backend(params)
        _refuse_unserved(params)
        profile = settle_profile(params.permission_profile)
        turn = models.Turn(
            id=params.turn_id,
            thread_id=thread.id,
            workspace_id=thread.workspace_id,
            status="InProgress",
            mode=params.mode or thread.mode,
            created_at=now_iso(),
            model_provider=self._options.provider,
            model=params.model or thread.model or self._options.model,
            prompt_manifest=None,
            permission_profile=profile,
            # It has no skills and no MCP servers: every capability asked for is not found, and the turn runs without it.
            capabilities=None
            if params.capabilities is None
            else [
                models.TurnCapabilityResolution(capabilityId=c.id, status="rejected", reason="not_found", message=f"this gateway has no {c.kind.type}")
                for c in params.capabilities
            ],
        )
        run = TurnRun(
            turn=turn,
            thread=thread,
            user_input=params.input,
            capabilities=params.capabilities,
            history=record.history(),
            connection=connection,
            approvals=self._approvals,
            chat=self._options.chat,
        )
        self._store.add_turn(record, run)
        run.start()
        return models.TurnStartResponse(turn=run.snapshot())

    def _refuse_backend(self, params: models.TurnStartParams) -> None:
        """The one backend served is this gateway's own model provider; asking for another starts nothing."""
        backend = params.execution_backend
        served = (params.model_provider is None or params.model_provider == self._options.provider) and (
            backend is None or (isinstance(backend, models.ExecutionBackendApiProvider) and backend.provider == self._options.provider)
        )
        if served:
            return
        # The backend as it was asked for (error.data names it), or the provider turn/start named.
        asked: JsonValue = cast(JsonValue, to_wire(backend)) if backend is not None else {"type": "apiProvider", "provider": params.model_provider}
        raise protocol_error("execution_backend_unavailable", f"this gateway serves only the API provider {self._options.provider}", execution_backend=asked)

    async def turn_cancel(self, params: models.TurnCancelParams, connection: ServerConnection) -> models.TurnCancelResponse:
        run = self._store.turn(params.thread_id, params.turn_id)
        if run.ended:
            raise protocol_error("turn_not_active", f"turn {run.turn.id} already ended {run.turn.status}", turn_id=run.turn.id, status=run.turn.status)
        await run.cancel(params.reason)
        return models.TurnCancelResponse(turn=run.snapshot())

    async def turn_resume(self, params: models.TurnResumeParams, connection: ServerConnection) -> models.TurnResumeResponse:
        # No turn of this gateway ever blocks.
        run = self._store.turn(params.thread_id, params.turn_id)
        raise protocol_error("turn_not_blocked", f"turn {run.turn.id} is {run.turn.status}, not Blocked", turn_id=run.turn.id, status=run.turn.status)

    async def turn_get(self, params: models.TurnGetParams, connection: ServerConnection) -> models.TurnGetResponse:
        return models.TurnGetResponse(turn=self._store.turn(params.thread_id, params.turn_id).snapshot())

    async def turn_items(self, params: models.TurnItemsParams, connection: ServerConnection) -> models.TurnItemsResponse:
        run = self._store.turn(params.thread_id, params.turn_id)
        stream = run.stream
        return models.TurnItemsResponse(
            thread_id=stream.thread_id,
            workspace_id=run.turn.workspace_id or DEFAULT_WORKSPACE,
            turn_id=stream.turn_id,
            events=stream.replay(params.after_sequence or 0, params.limit),
            last_sequence=stream.last_sequence,
        )

    # Permissions.

    async def turn_permission_request_respond(self, params: models.TurnPermissionRequestRespondParams, connection: ServerConnection) -> models.TurnPermissionRequestRespondResponse:
        return await self._approvals.respond(params)

    # Capabilities this gateway does not claim.

    async def turn_work_page(self, params: models.TurnWorkPageParams, connection: ServerConnection) -> models.TurnWorkPageResponse:
        _not_served("turn/work/page")

    async def turn_work_items_get(self, params: models.TurnWorkItemsGetParams, connection: ServerConnection) -> models.TurnWorkItemsGetResponse:
        _not_served("turn/work/items/get")

    async def turn_question_respond(self, params: models.TurnQuestionRespondParams, connection: ServerConnection) -> models.TurnQuestionRespondResponse:
        _not_served("turn/question/respond")

    async def agent_route_create(self, params: models.AgentDelegationRouteCreateParams, connection: ServerConnection) -> models.AgentDelegationRouteProjection:
        _not_served("agent/route/create")

    async def agent_route_list(self, params: models.AgentDelegationRouteListParams, connection: ServerConnection) -> models.AgentDelegationRouteListResponse:
        _not_served("agent/route/list")

    async def agent_route_revoke(self, params: models.AgentDelegationRouteRevokeParams, connection: ServerConnection) -> models.AgentDelegationRouteProjection:
        _not_served("agent/route/revoke")
