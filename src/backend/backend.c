/* backend.c: tensor views and cross-device copies, the parts of the seam every backend shares. */
#include "backend/backend.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "quant/quant.h"

bk_tensor bk_view3(bk_device *dev, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2, void *data) {
    bk_tensor t = { type, ne0, ne1, ne2, 0, data, dev, false };
    uint64_t bytes = 0;
    quant_row_bytes(type, ne0, &bytes);
    t.row_bytes = (size_t)bytes;
    return t;
}

bk_tensor bk_view(bk_device *dev, uint32_t type, int64_t ne0, int64_t ne1, void *data) {
    return bk_view3(dev, type, ne0, ne1, 1, data);
}

bk_tensor bk_expert(const bk_tensor *t, int64_t e) {
    bk_tensor r = *t;
    r.data = (char *)t->data + (size_t)e * (size_t)t->ne1 * t->row_bytes;
    r.ne2 = 1;
    return r;
}

uint64_t bk_bytes(const bk_tensor *t) {
    return t->data ? (uint64_t)t->ne2 * (uint64_t)t->ne1 * (uint64_t)t->row_bytes : 0;
}

bk_tensor bk_rows(const bk_tensor *t, int64_t row0, int64_t n) {
    bk_tensor r = *t;
    r.data = (char *)t->data + (size_t)row0 * t->row_bytes;
    r.ne1 = n;
    return r;
}

brasa_status bk_copy(const bk_tensor *src, bk_tensor *dst, brasa_error *err) {
    if (src->row_bytes != dst->row_bytes || src->ne1 > dst->ne1)
        return err_set(err, BRASA_ERR_INTERNAL, "bk_copy: shapes differ");
    /* host memory (or a device whose buffers are host memory, the CPU) on either side: one copy */
    const bool src_host = !src->dev || src->dev->ops->host_memory, dst_host = !dst->dev || dst->dev->ops->host_memory;
    if (src_host && dst_host) {
        memmove(dst->data, src->data, (size_t)src->ne1 * src->row_bytes);
        return BRASA_OK;
    }
    if (src_host)
        return dst->dev->ops->upload(dst, src->data, 0, src->ne1, err);
    if (dst_host)
        return src->dev->ops->download(src, dst->data, 0, src->ne1, err);
    /* between two devices: through a host bounce buffer */
    size_t bytes = (size_t)src->ne1 * src->row_bytes;
    void *tmp = malloc(bytes ? bytes : 1);
    if (!tmp)
        return err_set(err, BRASA_ERR_NO_MEMORY, "out of memory copying between devices");
    brasa_status st = src->dev->ops->download(src, tmp, 0, src->ne1, err);
    if (st == BRASA_OK)
        st = dst->dev->ops->upload(dst, tmp, 0, src->ne1, err);
    free(tmp);
    return st;
}
