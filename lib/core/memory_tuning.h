// Servers and workers allocate and free messages of tens of megabytes every
// step. By default glibc maps each afresh and unmaps it when freed, so every
// step pays page faults and zeroing for every byte it moves. Keeping them on
// the heap reuses the pages.
#pragma once

namespace shoal {

// Call once at the start of a process that exchanges parameters.
void KeepLargeAllocations();

}  // namespace shoal
