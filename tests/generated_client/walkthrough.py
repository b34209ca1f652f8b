"""The README's HTTP walkthrough, run with a client generated from
docs/openapi.json by openapi-python-client (see `.ci/contract`, which
generates the client and starts the server).

Usage: walkthrough.py BASE_URL WRITER_KEY

Every call goes through the generated code: its request building, its
parameter encoding and its parsing of each answer into the documented
types. A document that does not describe the served API makes this fail:
a parameter in the wrong place is sent where the server does not read it, a
wrong schema fails to parse, an undocumented status raises.
"""

import sys
import time
import uuid

from client import AuthenticatedClient
from client.api.commands import (
    confirm_lines,
    confirm_reservation,
    receive_stock,
    release_reservation,
    reserve,
)
from client.api.reads import get_order, get_reservation, get_stock
from client.models import (
    ConfirmBody,
    ConfirmLinesRequest,
    ErrorBody,
    ErrorBodyCode,
    LineRequest,
    OrderResponse,
    ReceiptResponse,
    ReceiveRequest,
    ReservationResponse,
    ReservationState,
    ReserveRequest,
    StockResponse,
)

# How long the read models may take to catch up with a command.
CATCH_UP_SECONDS = 10


def expect(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok  {what}")


def main(base_url, key):
    # The README's ids, made unique so the walkthrough can run on a server
    # that has seen them.
    run = uuid.uuid4().hex[:8]
    apple, receipt, reservation, order = (f"{x}-{run}" for x in ("apple", "IN-1", "R-1", "O-1"))

    client = AuthenticatedClient(
        base_url=base_url, token=key, raise_on_unexpected_status=True
    )
    with client as c:
        # curl -X POST /v1/stock/receipts -d '{"receipt_id": "IN-1", "sku": "apple", "quantity": 10}'
        body = ReceiveRequest(receipt_id=receipt, sku=apple, quantity=10)
        r = receive_stock.sync_detailed(client=c, body=body, x_correlation_id=f"walk-{run}")
        expect(r.status_code == 201, "a receipt is created: 201")
        expect(isinstance(r.parsed, ReceiptResponse), "its answer parses as ReceiptResponse")
        expect(r.parsed.location == "default" and not r.parsed.replayed, "default location, not a replay")
        expect(r.headers.get("x-correlation-id") == f"walk-{run}", "the correlation id comes back")
        again = receive_stock.sync_detailed(client=c, body=body)
        expect(again.status_code == 200 and again.parsed.replayed, "the same receipt again is a replay: 200")

        # curl -X POST /v1/reservations -d '{"reservation_id": "R-1", "order_id": "O-1", "lines": [...]}'
        req = ReserveRequest(
            reservation_id=reservation,
            order_id=order,
            lines=[LineRequest(sku=apple, quantity=2)],
        )
        r = reserve.sync_detailed(client=c, body=req)
        expect(r.status_code == 201, "a reservation is created: 201")
        res = r.parsed
        expect(isinstance(res, ReservationResponse), "its answer parses as ReservationResponse")
        expect(res.state == ReservationState.RESERVED, "it is RESERVED")
        expect([(l.sku, l.quantity) for l in res.lines] == [(apple, 2)], "it holds 2 apples")
        expect(res.expires_at is not None and res.expires_at > res.created_at, "it expires later")

        too_many = ReserveRequest(
            reservation_id=f"R-2-{run}",
            order_id=f"O-2-{run}",
            lines=[LineRequest(sku=apple, quantity=9)],
        )
        r = reserve.sync_detailed(client=c, body=too_many)
        expect(r.status_code == 422, "reserving more than is available: 422")
        expect(isinstance(r.parsed, ErrorBody), "its answer parses as ErrorBody")
        expect(r.parsed.code == ErrorBodyCode.INSUFFICIENT_STOCK, "with the code INSUFFICIENT_STOCK")

        # curl -X POST /v1/reservations/R-1/confirmations -d '{"confirmation_id": "ship-1", ...}'
        ship = ConfirmLinesRequest(confirmation_id="ship-1", lines=[LineRequest(sku=apple, quantity=1)])
        r = confirm_lines.sync_detailed(reservation, client=c, body=ship)
        expect(r.status_code == 201, "a partial confirm: 201")
        expect(r.parsed.state == ReservationState.RESERVED, "the rest is still RESERVED")
        line = r.parsed.lines[0]
        # The generator may rename `open`, a Python builtin, as it renames `type`.
        still_open = getattr(line, "open_", getattr(line, "open", None))
        expect((still_open, line.confirmed) == (1, 1), f"one apple shipped, one open (got {line})")

        # curl -X POST /v1/reservations/R-1/confirm -d '{}'
        r = confirm_reservation.sync_detailed(reservation, client=c, body=ConfirmBody())
        expect(r.status_code == 200, "confirm: 200")
        expect(r.parsed.state == ReservationState.CONFIRMED, "it is CONFIRMED")
        expect(
            [e.type_ for e in r.parsed.events]
            == ["ReservationCreated", "ReservationLinesConfirmed", "ReservationConfirmed"],
            "its timeline: created, partly confirmed, confirmed",
        )

        r = release_reservation.sync_detailed(reservation, client=c)
        expect(r.status_code == 409, "releasing a confirmed reservation: 409")
        expect(r.parsed.code == ErrorBodyCode.ALREADY_CONFIRMED, "with the code ALREADY_CONFIRMED")

        # curl /v1/reservations/R-1
        r = get_reservation.sync_detailed(reservation, client=c)
        expect(r.status_code == 200 and r.parsed.state == ReservationState.CONFIRMED, "read back: CONFIRMED")
        expect(r.parsed.replayed is not True, "a read is not a command answer")

        # curl /v1/stock/apple (the read model catches up within moments)
        deadline = time.monotonic() + CATCH_UP_SECONDS
        while True:
            r = get_stock.sync_detailed(apple, client=c)
            s = r.parsed
            figures = (s.on_hand, s.reserved, s.available, s.confirmed) if isinstance(s, StockResponse) else None
            if figures == (8, 0, 8, 2) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        expect(figures == (8, 0, 8, 2), f"stock: on hand 8, reserved 0, available 8, confirmed 2 (got {figures})")
        expect(s.as_of.position is not None, "the figures say how far they have come")

        r = get_stock.sync_detailed(apple, client=c, as_of_position=0)
        expect(r.status_code == 200 and r.parsed.on_hand == 0, "as of position 0, the query parameter: nothing yet")

        # curl /v1/orders/O-1
        r = get_order.sync_detailed(order, client=c)
        expect(r.status_code == 200 and isinstance(r.parsed, OrderResponse), "the order parses as OrderResponse")
        expect(r.parsed.reservation_id == reservation, "the order names its reservation")

        r = get_reservation.sync_detailed(f"no-such-{run}", client=c)
        expect(r.status_code == 404 and r.parsed.code == ErrorBodyCode.RESERVATION_NOT_FOUND, "an unknown reservation: 404")

    print("the walkthrough passed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
