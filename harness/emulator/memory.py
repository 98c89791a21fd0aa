"""Global memory at real host addresses: the live tensors and hipMalloc blocks, checked per access."""
import bisect
import ctypes

import numpy as np

from .errors import EmulationFault


class Region:
    """One live block: its bytes as a numpy view over the host memory itself."""

    def __init__(self, address: int, nbytes: int, name: str):
        self.address = address
        self.end = address + nbytes
        self.name = name
        buffer = (ctypes.c_uint8 * max(nbytes, 1)).from_address(address)
        self.bytes = np.ctypeslib.as_array(buffer)[:nbytes]


LINE_BYTES = 128  # gfx950's L2 cache line: the unit a trace counts memory traffic in


class HostMemory:
    """Every region a kernel may touch; an access outside all of them is a fault."""

    def __init__(self):
        self.starts: list[int] = []
        self.regions: list[Region] = []
        self.touched: list | None = None  # a traced wave's list: the cache lines each access touches

    def note_lines(self, addresses: np.ndarray, nbytes: int) -> None:
        """Each lane's first cache line, and its last where the access crosses into it (an access is at
        most one line long); repeats are left to trace.count_lines, once a workgroup ends."""
        start = addresses.astype(np.uint64)
        first, last = start // LINE_BYTES, (start + (nbytes - 1)) // LINE_BYTES
        self.touched.append(first)
        crossing = last != first
        if crossing.any():
            self.touched.append(last[crossing])

    def add_region(self, address: int, nbytes: int, name: str) -> None:
        self.remove_region(address)
        at = bisect.bisect_left(self.starts, address)
        self.starts.insert(at, address)
        self.regions.insert(at, Region(address, nbytes, name))

    def remove_region(self, address: int) -> None:
        at = bisect.bisect_left(self.starts, address)
        if at < len(self.starts) and self.starts[at] == address:
            del self.starts[at]
            del self.regions[at]

    def add_array(self, array: np.ndarray, name: str) -> None:
        """A numpy array of ours (kernarg segment, dispatch packet) as a region."""
        self.add_region(array.ctypes.data, array.nbytes, name)

    def add_tensor(self, tensor, name: str) -> None:
        """A CPU torch tensor's whole storage, as the HIP runtime registers it."""
        storage = tensor.untyped_storage()
        self.add_region(storage.data_ptr(), storage.nbytes(), name)

    def region_of(self, address: int, nbytes: int) -> Region | None:
        at = bisect.bisect_right(self.starts, address) - 1
        if at < 0:
            return None
        region = self.regions[at]
        return region if address + nbytes <= region.end else None

    def describe(self, address: int) -> str:
        """Where a bad address lies relative to the nearest region (for the fault's message)."""
        at = bisect.bisect_right(self.starts, address) - 1
        if at >= 0:
            region = self.regions[at]
            past = address - region.end
            return f"0x{address:x} is {past} bytes past the end of {region.name}"
        return f"0x{address:x} lies below every live region"

    def locate(self, addresses: np.ndarray, nbytes: int, what: str) -> tuple[Region, np.ndarray]:
        """The one region all lanes' accesses lie in, and each lane's offset into it."""
        low = int(addresses.min())
        high = int(addresses.max())
        region = self.region_of(low, high - low + nbytes)
        if region is not None:
            return region, (addresses - region.address).astype(np.int64)
        return self.locate_lanes(addresses, nbytes, what)

    def locate_lanes(self, addresses, nbytes, what):
        for address in addresses.tolist():
            if self.region_of(address, nbytes) is None:
                raise EmulationFault("out of bounds", f"{what} of {nbytes} bytes: "
                                     + self.describe(address))
        return None, addresses.astype(np.int64)

    def gather(self, addresses: np.ndarray, nbytes: int, what: str = "load") -> np.ndarray:
        """Bytes [lanes, nbytes] read at each lane's address."""
        if self.touched is not None:
            self.note_lines(addresses, nbytes)
        region, offsets = self.locate(addresses, nbytes, what)
        index = offsets[:, None] + np.arange(nbytes)
        if region is not None:
            return region.bytes[index]
        return self.gather_lanes(addresses, nbytes)

    def gather_lanes(self, addresses, nbytes):
        rows = []
        for address in addresses.tolist():
            region = self.region_of(address, nbytes)
            start = address - region.address
            rows.append(region.bytes[start:start + nbytes])
        return np.stack(rows) if rows else np.zeros((0, nbytes), np.uint8)

    def scatter(self, addresses: np.ndarray, data: np.ndarray, what: str = "store") -> None:
        """Writes data [lanes, nbytes] at each lane's address, lanes in order."""
        nbytes = data.shape[1]
        if self.touched is not None:
            self.note_lines(addresses, nbytes)
        region, offsets = self.locate(addresses, nbytes, what)
        if region is not None:
            region.bytes[offsets[:, None] + np.arange(nbytes)] = data
            return
        for address, row in zip(addresses.tolist(), data):
            target = self.region_of(address, nbytes)
            start = address - target.address
            target.bytes[start:start + nbytes] = row
