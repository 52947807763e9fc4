# Scalar types shared by all ssvm Cython modules (scikit-learn's naming).
from libc.stdint cimport int32_t, int64_t

ctypedef double float64_t
ctypedef Py_ssize_t intp_t
