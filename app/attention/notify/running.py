"""The web process's deliverer, started and stopped with the app's lifespan (``app/app.py``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from app.attention.notify.deliverer import Deliverer
from app.core.context import Core


def lifespan(core_provider: Callable[[], Core]) -> Callable[[], contextlib.AbstractAsyncContextManager[None]]:
    """A Reflex lifespan task: a deliverer runs while the web process serves."""

    @contextlib.asynccontextmanager
    async def notification_deliverer() -> AsyncIterator[None]:
        core = await asyncio.to_thread(core_provider)
        deliverer = Deliverer.for_settings(core.db, core.clock, core.settings, "web").start()
        try:
            yield
        finally:
            await asyncio.to_thread(deliverer.stop, 2.0)

    return notification_deliverer
