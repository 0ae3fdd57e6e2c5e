// SPDX-License-Identifier: MIT
/*
 * knitting.hpp - a header-only C++17 binding over libknitting's C ABI
 * (knitting.h). See knitting.hpp(3).
 *
 * Nothing here adds to the library: every function is an inline wrapper of
 * the C functions, and a program using it links -lknitting as a C program
 * does. What it adds is C++ ownership and types:
 *
 *   knit::pool        owns a knit_pool_t (destroyed with the object; movable,
 *                     not copyable) and the C++ callables of its tasks;
 *   knit::completion  owns one completion (released with the object);
 *   knit::error       the KNIT_E* codes as an enum class, with a
 *                     std::error_category ("knitting");
 *   knit::result<T>   a T or a knit::error: what every fallible function
 *                     returns. It never throws; with exceptions enabled,
 *                     result::value() throws knit::exception instead of
 *                     returning an error, and the pool constructor throws.
 *
 * Lifetimes (the rules of knitting.h, spelled out for the C++ types):
 *   - an argument (knit::value) is a view: the library copies its bytes
 *     before call() or enqueue() returns;
 *   - inside a task, the argument's bytes stay valid until the task returns;
 *   - a task's std::string or std::vector result is copied into memory from
 *     knit_ctx_alloc() and shipped from there; a view result (string_view,
 *     knit::bytes, knit::value) must point at memory that outlives the task
 *     function (static data, the task's own state, the argument, or
 *     knit_ctx_alloc() memory);
 *   - a completion's bytes (completion::get(), message()) stay valid until
 *     the completion is destroyed or reset, and a completion must not outlive
 *     its pool (knit_pool_destroy frees what was not released).
 */
#ifndef KNITTING_HPP
#define KNITTING_HPP

#include "knitting.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// 1 when the translation unit is compiled with exceptions (-fexceptions, the
// default), 0 under -fno-exceptions: then nothing in this header throws and
// the throwing members (result::value(), the pool constructor) are absent.
#ifndef KNIT_HPP_EXCEPTIONS
#if defined(__cpp_exceptions)
#define KNIT_HPP_EXCEPTIONS 1
#else
#define KNIT_HPP_EXCEPTIONS 0
#endif
#endif

namespace knit {

// ---- errors ------------------------------------------------------------------

// The KNIT_E* codes, positive as in enum knit_error; a C function's negative
// return value rc is knit::error(-rc).
enum class error : int {
	invalid_argument = KNIT_EINVAL,
	out_of_memory = KNIT_ENOMEM,
	try_again = KNIT_EAGAIN,
	no_task = KNIT_ENOTASK,
	too_big = KNIT_ETOOBIG,
	closed = KNIT_ECLOSED,
	timed_out = KNIT_ETIMEDOUT,
	canceled = KNIT_ECANCELED,
	crashed = KNIT_ECRASHED,
	protocol = KNIT_EPROTO,
	task = KNIT_ETASK,
	system = KNIT_ESYSTEM,
	version = KNIT_EVERSION,
	not_found = KNIT_ENOTFOUND,
	busy = KNIT_EBUSY,
	no_such_file = KNIT_ENOENT,  // 1.2: a file given to the pool does not exist
	access_denied = KNIT_EACCES, // 1.2: such a file exists but cannot be used
};

// knit_strerror's static text for e; never NULL.
inline const char *message(knit::error e) noexcept { return knit_strerror(static_cast<int>(e)); }

// Why this thread's last knit::pool::create (knit_pool_create) failed, naming
// the file or value: knit_last_error(3). "" after a success; never NULL.
inline const char *last_error() noexcept { return knit_last_error(); }

// The error of a negative C return value (rc < 0).
constexpr knit::error error_of(int rc) noexcept { return static_cast<knit::error>(-rc); }

namespace detail {
class category_impl final : public std::error_category {
public:
	const char *name() const noexcept override { return "knitting"; }
	std::string message(int code) const override { return knit_strerror(code); }
};
} // namespace detail

// The category of knit::error codes in std::error_code: name "knitting",
// messages from knit_strerror.
inline const std::error_category &category() noexcept
{
	static const detail::category_impl cat;
	return cat;
}

inline std::error_code make_error_code(knit::error e) noexcept
{
	return std::error_code(static_cast<int>(e), knit::category());
}

#if KNIT_HPP_EXCEPTIONS
// What result::value() and the pool constructor throw: a std::system_error
// whose code() is make_error_code(error()); task_code() is the task's own
// code when error() is knit::error::task, else 0.
class exception : public std::system_error {
public:
	explicit exception(knit::error e, std::int32_t task_code = 0)
	    : std::system_error(knit::make_error_code(e),
				e == knit::error::task
					? "knit (task code " + std::to_string(task_code) + ")"
					: std::string("knit")),
	      err_(e), task_code_(task_code)
	{}
	knit::error error() const noexcept { return err_; }
	std::int32_t task_code() const noexcept { return task_code_; }

private:
	knit::error err_;
	std::int32_t task_code_;
};
#endif

// ---- result<T> ----------------------------------------------------------------

// A T, or the knit::error that kept it from being made. Reading the value of
// an error (operator*, operator->) is undefined, as with std::optional; test
// first. task_code() is the failing task's code when error() is
// knit::error::task (0 otherwise).
template <class T> class [[nodiscard]] result {
public:
	using value_type = T;

	result(const T &v) : val_(v) {}
	result(T &&v) noexcept(std::is_nothrow_move_constructible_v<T>) : val_(std::move(v)) {}
	result(knit::error e, std::int32_t task_code = 0) noexcept : err_(e), task_code_(task_code)
	{}

	bool has_value() const noexcept { return val_.has_value(); }
	explicit operator bool() const noexcept { return val_.has_value(); }

	T &operator*() &noexcept { return *val_; }
	const T &operator*() const &noexcept { return *val_; }
	T &&operator*() &&noexcept { return std::move(*val_); }
	T *operator->() noexcept { return &*val_; }
	const T *operator->() const noexcept { return &*val_; }

	// Meaningful only without a value.
	knit::error error() const noexcept { return err_; }
	std::int32_t task_code() const noexcept { return task_code_; }
	std::error_code error_code() const noexcept
	{
		return has_value() ? std::error_code() : knit::make_error_code(err_);
	}
	const char *message() const noexcept
	{
		return has_value() ? knit_strerror(0) : knit::message(err_);
	}

	template <class U> T value_or(U &&other) const &
	{
		return has_value() ? *val_ : static_cast<T>(std::forward<U>(other));
	}
	template <class U> T value_or(U &&other) &&
	{
		return has_value() ? std::move(*val_) : static_cast<T>(std::forward<U>(other));
	}

#if KNIT_HPP_EXCEPTIONS
	// The value, or knit::exception(error(), task_code()).
	T &value() &
	{
		check();
		return *val_;
	}
	const T &value() const &
	{
		check();
		return *val_;
	}
	T &&value() &&
	{
		check();
		return std::move(*val_);
	}
#endif

private:
#if KNIT_HPP_EXCEPTIONS
	void check() const
	{
		if (!val_)
			throw knit::exception(err_, task_code_);
	}
#endif
	std::optional<T> val_;
	knit::error err_ = knit::error::invalid_argument;
	std::int32_t task_code_ = 0;
};

// Success with nothing to return, or an error.
template <> class [[nodiscard]] result<void> {
public:
	using value_type = void;

	result() noexcept = default;
	result(knit::error e, std::int32_t task_code = 0) noexcept
	    : ok_(false), err_(e), task_code_(task_code)
	{}

	bool has_value() const noexcept { return ok_; }
	explicit operator bool() const noexcept { return ok_; }
	knit::error error() const noexcept { return err_; }
	std::int32_t task_code() const noexcept { return task_code_; }
	std::error_code error_code() const noexcept
	{
		return ok_ ? std::error_code() : knit::make_error_code(err_);
	}
	const char *message() const noexcept
	{
		return ok_ ? knit_strerror(0) : knit::message(err_);
	}
#if KNIT_HPP_EXCEPTIONS
	void value() const
	{
		if (!ok_)
			throw knit::exception(err_, task_code_);
	}
#endif

private:
	bool ok_ = true;
	knit::error err_ = knit::error::invalid_argument;
	std::int32_t task_code_ = 0;
};

namespace detail {
inline knit::result<void> check(int rc) noexcept
{
	if (rc < 0)
		return knit::result<void>(knit::error_of(rc));
	return knit::result<void>();
}
template <class> inline constexpr bool dependent_false = false;
} // namespace detail

// ---- values ---------------------------------------------------------------------

using ticket = knit_ticket_t;

// Timeouts. call(): task_default (0, or any value <= 0) is the task's own
// default timeout, no_timeout none at all. complete() and completions(): 0
// polls, no_timeout (or any negative value) waits without limit.
inline constexpr std::chrono::nanoseconds task_default{0};
inline constexpr std::chrono::nanoseconds poll{0};
inline constexpr std::chrono::nanoseconds no_timeout = std::chrono::nanoseconds::max();

// What an exception escaping a C++ task leaves as the task's error code
// (the completion's status is -KNIT_ETASK; the message is what()).
inline constexpr std::int32_t exception_code = -KNIT_ETASK;

// knit_value_type_t as a scoped enum.
enum class kind : std::uint32_t {
	none = KNIT_VALUE_NONE,
	boolean = KNIT_VALUE_BOOL,
	i64 = KNIT_VALUE_I64,
	f64 = KNIT_VALUE_F64,
	bytes = KNIT_VALUE_BYTES,
	string = KNIT_VALUE_STRING,
	error = KNIT_VALUE_ERROR,
};

// A view of bytes (neither owns nor copies them).
class bytes {
public:
	constexpr bytes() noexcept = default;
	bytes(const void *data, std::size_t size) noexcept
	    : data_(static_cast<const unsigned char *>(data)), size_(size)
	{}
	// Any contiguous container of one-byte elements (std::vector<unsigned
	// char>, std::array<std::byte, N>, std::string ...); explicit, so that a
	// std::string argument is a string, not bytes, unless asked.
	template <class C,
		  class E = std::remove_pointer_t<decltype(std::data(std::declval<const C &>()))>,
		  std::enable_if_t<sizeof(E) == 1 && std::is_trivially_copyable_v<E>, int> = 0>
	explicit bytes(const C &c) noexcept : bytes(std::data(c), std::size(c))
	{}

	const unsigned char *data() const noexcept { return data_; }
	std::size_t size() const noexcept { return size_; }
	bool empty() const noexcept { return size_ == 0; }
	const unsigned char *begin() const noexcept { return data_; }
	const unsigned char *end() const noexcept { return data_ + size_; }
	unsigned char operator[](std::size_t i) const noexcept { return data_[i]; }

private:
	const unsigned char *data_ = nullptr;
	std::size_t size_ = 0;
};

// A tagged value (knit_value_t) as a view: copying it copies the view, not
// the bytes. The argument type of call() and enqueue() (implicit from bool,
// integers, floating point, strings and knit::bytes) and of a task.
class value {
public:
	constexpr value() noexcept : v_() {}
	constexpr value(const knit_value_t &raw) noexcept : v_(raw) {}
	value(bool b) noexcept : v_()
	{
		v_.type = KNIT_VALUE_BOOL;
		v_.i64 = b ? 1 : 0;
	}
	template <class I,
		  std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
	value(I i) noexcept : v_()
	{
		v_.type = KNIT_VALUE_I64;
		v_.i64 = static_cast<std::int64_t>(i);
	}
	template <class F, std::enable_if_t<std::is_floating_point_v<F>, int> = 0>
	value(F f) noexcept : v_()
	{
		v_.type = KNIT_VALUE_F64;
		v_.f64 = static_cast<double>(f);
	}
	value(std::string_view s) noexcept : v_()
	{
		v_.type = KNIT_VALUE_STRING;
		v_.data = s.data();
		v_.len = s.size();
	}
	value(const std::string &s) noexcept : value(std::string_view(s)) {}
	value(const char *s) noexcept : value(s ? std::string_view(s) : std::string_view()) {}
	value(knit::bytes b) noexcept : v_()
	{
		v_.type = KNIT_VALUE_BYTES;
		v_.data = b.data();
		v_.len = b.size();
	}

	knit::kind kind() const noexcept { return static_cast<knit::kind>(v_.type); }
	bool is(knit::kind k) const noexcept { return kind() == k; }
	bool is_none() const noexcept { return v_.type == KNIT_VALUE_NONE; }

	// Unchecked reads of the fields (look at kind() first, or use as<T>()).
	std::int64_t i64() const noexcept { return v_.i64; }
	double f64() const noexcept { return v_.f64; }
	bool boolean() const noexcept { return v_.i64 != 0; }
	std::int32_t code() const noexcept { return v_.code; }
	std::string_view str() const noexcept
	{
		return v_.len ? std::string_view(static_cast<const char *>(v_.data), v_.len)
			      : std::string_view();
	}
	knit::bytes data() const noexcept { return knit::bytes(v_.data, v_.len); }

	const knit_value_t &raw() const noexcept { return v_; }

	// A checked conversion; knit::error::invalid_argument when the kind does
	// not match or an integer does not fit T:
	//   bool                      from kind::boolean
	//   an integral type          from kind::i64, range-checked
	//   a floating-point type     from kind::f64
	//   std::string_view          from kind::string (a view: see the header)
	//   std::string               from kind::string or kind::bytes (a copy)
	//   knit::bytes               from kind::bytes or kind::string (a view)
	//   std::vector<unsigned char> from kind::bytes or kind::string (a copy)
	//   knit::value               anything
	template <class T> knit::result<T> as() const
	{
		if constexpr (std::is_same_v<T, value>) {
			return knit::result<T>(*this);
		} else if constexpr (std::is_same_v<T, bool>) {
			if (v_.type != KNIT_VALUE_BOOL)
				return mismatch<T>();
			return knit::result<T>(v_.i64 != 0);
		} else if constexpr (std::is_integral_v<T>) {
			if (v_.type != KNIT_VALUE_I64)
				return mismatch<T>();
			if constexpr (std::is_signed_v<T>) {
				if (v_.i64 < static_cast<std::int64_t>(
						     std::numeric_limits<T>::min()) ||
				    v_.i64 > static_cast<std::int64_t>(
						     std::numeric_limits<T>::max()))
					return mismatch<T>();
			} else {
				if (v_.i64 < 0 || static_cast<std::uint64_t>(v_.i64) >
							  static_cast<std::uint64_t>(
								  std::numeric_limits<T>::max()))
					return mismatch<T>();
			}
			return knit::result<T>(static_cast<T>(v_.i64));
		} else if constexpr (std::is_floating_point_v<T>) {
			if (v_.type != KNIT_VALUE_F64)
				return mismatch<T>();
			return knit::result<T>(static_cast<T>(v_.f64));
		} else if constexpr (std::is_same_v<T, std::string_view>) {
			if (v_.type != KNIT_VALUE_STRING)
				return mismatch<T>();
			return knit::result<T>(str());
		} else if constexpr (std::is_same_v<T, std::string>) {
			if (!has_bytes())
				return mismatch<T>();
			return knit::result<T>(std::string(str()));
		} else if constexpr (std::is_same_v<T, knit::bytes>) {
			if (!has_bytes())
				return mismatch<T>();
			return knit::result<T>(data());
		} else if constexpr (std::is_same_v<T, std::vector<unsigned char>>) {
			if (!has_bytes())
				return mismatch<T>();
			return knit::result<T>(T(data().begin(), data().end()));
		} else {
			static_assert(detail::dependent_false<T>,
				      "knit::value::as<T>: no conversion to T");
		}
	}

private:
	template <class T> static knit::result<T> mismatch()
	{
		return knit::result<T>(knit::error::invalid_argument);
	}
	bool has_bytes() const noexcept
	{
		return v_.type == KNIT_VALUE_BYTES || v_.type == KNIT_VALUE_STRING;
	}
	knit_value_t v_;
};

// ---- tasks ------------------------------------------------------------------------

// A C++ task's view of its running call (the knit_ctx_* functions).
class task_context {
public:
	explicit task_context(knit_ctx_t *ctx) noexcept : ctx_(ctx) {}
	// Whether the call's abort bit is raised (knit_ctx_aborted).
	bool aborted() const noexcept { return knit_ctx_aborted(ctx_) == 1; }
	// The call's CLOCK_MONOTONIC deadline in ns, 0 if none.
	std::int64_t deadline_ns() const noexcept { return knit_ctx_deadline_ns(ctx_); }
	int lane() const noexcept { return knit_ctx_lane(ctx_); }
	// Result memory shipped without a copy (knit_ctx_alloc): valid until the
	// task returns; NULL when size is 0, over max_payload_bytes, or none left.
	void *alloc(std::size_t size) const noexcept { return knit_ctx_alloc(ctx_, size); }
	knit_ctx_t *raw() const noexcept { return ctx_; }

private:
	knit_ctx_t *ctx_;
};

// A task's failure: the call completes with -KNIT_ETASK and an error value
// with this code and message (copied, like a std::string result).
struct task_error {
	std::int32_t code;
	std::string message;
};

// What a C++ task returns, implicitly made from: nothing (kind::none), bool,
// integers, floating point, knit::value / std::string_view / const char * /
// knit::bytes (views: they must outlive the task function), std::string and
// std::vector<unsigned char> (copied into knit_ctx_alloc memory), or a
// knit::task_error. A task may also return any of those types directly.
class reply {
public:
	reply() noexcept = default;
	reply(knit::value v) noexcept : v_(v.raw()) {}
	reply(bool b) noexcept : reply(knit::value(b)) {}
	template <class I,
		  std::enable_if_t<std::is_arithmetic_v<I> && !std::is_same_v<I, bool>, int> = 0>
	reply(I i) noexcept : reply(knit::value(i))
	{}
	reply(std::string_view s) noexcept : reply(knit::value(s)) {}
	reply(const char *s) noexcept : reply(knit::value(s)) {}
	reply(knit::bytes b) noexcept : reply(knit::value(b)) {}
	reply(std::string s) noexcept : owned_(std::move(s)), copy_(true)
	{
		v_.type = KNIT_VALUE_STRING;
	}
	reply(const std::vector<unsigned char> &b) : owned_(b.begin(), b.end()), copy_(true)
	{
		v_.type = KNIT_VALUE_BYTES;
	}
	reply(knit::task_error e) noexcept
	    : owned_(std::move(e.message)), copy_(true), failed_(true)
	{
		v_.type = KNIT_VALUE_ERROR;
		v_.code = e.code;
	}

	// Fill a task's ret and give the task function's return value (0, or 1
	// for an error value). Bytes to copy go into knit_ctx_alloc memory.
	int ship(knit_ctx_t *ctx, knit_value_t *ret) noexcept
	{
		if (copy_) {
			v_.data = nullptr;
			v_.len = owned_.size();
			if (!owned_.empty()) {
				// One byte more for the NUL the library puts after strings.
				void *p = knit_ctx_alloc(ctx, owned_.size() + 1);
				if (p == nullptr)
					return refuse(ret, -KNIT_ENOMEM,
						      "knitting.hpp: knit_ctx_alloc refused the "
						      "result's bytes");
				std::memcpy(p, owned_.data(), owned_.size());
				static_cast<char *>(p)[owned_.size()] = '\0';
				v_.data = p;
			}
		}
		*ret = v_;
		return failed_ ? 1 : 0;
	}

	// An error value with a static message.
	static int refuse(knit_value_t *ret, std::int32_t code, const char *msg) noexcept
	{
		*ret = knit_value_t();
		ret->type = KNIT_VALUE_ERROR;
		ret->code = code;
		ret->data = msg;
		ret->len = std::strlen(msg);
		return 1;
	}

private:
	knit_value_t v_{};
	std::string owned_;
	bool copy_ = false;
	bool failed_ = false;
};

// A thread-pool task: a name (copied by the pool) and a callable, stored in
// the pool once, at creation. The callable is one of
//   R f(knit::task_context &ctx, knit::value arg)
//   R f(knit::value arg)
//   int f(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret)   (as in C)
// where R is void or anything knit::reply is made from. It runs on worker
// threads, possibly several at once: state it changes needs its own
// synchronisation. An exception escaping it (when exceptions are enabled)
// completes the call with -KNIT_ETASK, code knit::exception_code and the
// exception's what() as the message.
template <class F> struct task_def {
	const char *name;
	F fn;
	std::uint32_t timeout_ms;
	std::uint32_t flags; // enum knit_task_flags
};

template <class F>
task_def<std::decay_t<F>> task(const char *name, F &&fn, std::uint32_t timeout_ms = 0,
			       std::uint32_t flags = 0)
{
	return task_def<std::decay_t<F>>{name, std::forward<F>(fn), timeout_ms, flags};
}

namespace detail {
// Each task's knit_task_t.data: its callable and how to run it.
struct task_slot {
	int (*invoke)(void *fn, knit_ctx_t *ctx, const knit_value_t *arg,
		      knit_value_t *ret) noexcept;
	void *fn;
};

// The one knit_task_fn of every C++ task.
inline int trampoline(knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret) noexcept
{
	const task_slot *s = static_cast<const task_slot *>(knit_ctx_task_data(ctx));
	return s->invoke(s->fn, ctx, arg, ret);
}

template <class F, class R> int finish(F &&run, knit_ctx_t *ctx, knit_value_t *ret) noexcept
{
#if KNIT_HPP_EXCEPTIONS
	try {
#endif
		if constexpr (std::is_void_v<R>) {
			run();
			return 0;
		} else {
			return knit::reply(run()).ship(ctx, ret);
		}
#if KNIT_HPP_EXCEPTIONS
	} catch (const std::exception &e) {
		return knit::reply(knit::task_error{knit::exception_code, e.what()}).ship(ctx, ret);
	} catch (...) {
		return knit::reply::refuse(ret, knit::exception_code,
					   "knitting.hpp: the task threw a non-std exception");
	}
#endif
}

template <class F>
int invoke(void *obj, knit_ctx_t *ctx, const knit_value_t *arg, knit_value_t *ret) noexcept
{
	F &f = *static_cast<F *>(obj);
	if constexpr (std::is_invocable_r_v<int, F &, knit_ctx_t *, const knit_value_t *,
					    knit_value_t *>) {
#if KNIT_HPP_EXCEPTIONS
		try {
			return f(ctx, arg, ret);
		} catch (...) {
			return knit::reply::refuse(ret, knit::exception_code,
						   "knitting.hpp: the task threw");
		}
#else
		return f(ctx, arg, ret);
#endif
	} else if constexpr (std::is_invocable_v<F &, knit::task_context &, knit::value>) {
		using R = std::invoke_result_t<F &, knit::task_context &, knit::value>;
		knit::task_context tc(ctx);
		auto run = [&]() -> R { return f(tc, knit::value(*arg)); };
		return finish<decltype(run) &, R>(run, ctx, ret);
	} else if constexpr (std::is_invocable_v<F &, knit::value>) {
		using R = std::invoke_result_t<F &, knit::value>;
		auto run = [&]() -> R { return f(knit::value(*arg)); };
		return finish<decltype(run) &, R>(run, ctx, ret);
	} else {
		static_assert(
			dependent_false<F>,
			"knit::task: the callable takes (knit::task_context &, knit::value), "
			"(knit::value) or (knit_ctx_t *, const knit_value_t *, knit_value_t *)");
		return 0;
	}
}

// Every callable of a pool, allocated once at creation, and the slots that
// knit_task_t.data points at.
template <class... F> struct task_block {
	std::tuple<F...> fns;
	task_slot slots[sizeof...(F)];
	template <class... A> explicit task_block(A &&...a) : fns(std::forward<A>(a)...), slots() {}
};

template <class B> void delete_block(void *b) noexcept { delete static_cast<B *>(b); }
} // namespace detail

// ---- completions --------------------------------------------------------------------

// One completion, owned: destroying or reset()ting it releases its result's
// bytes (knit_completion_release). Movable, not copyable; it must not
// outlive its pool.
class completion {
public:
	completion() noexcept : pool_(nullptr), c_() {}
	// Adopt a completion the library filled for pool.
	completion(knit_pool_t *pool, const knit_completion_t &c) noexcept : pool_(pool), c_(c) {}
	completion(completion &&o) noexcept : pool_(o.pool_), c_(o.c_)
	{
		o.pool_ = nullptr;
		o.c_ = knit_completion_t();
	}
	completion &operator=(completion &&o) noexcept
	{
		if (this != &o) {
			reset();
			pool_ = o.pool_, c_ = o.c_;
			o.pool_ = nullptr;
			o.c_ = knit_completion_t();
		}
		return *this;
	}
	completion(const completion &) = delete;
	completion &operator=(const completion &) = delete;
	~completion() { reset(); }

	// Release now; the completion is then empty.
	void reset() noexcept
	{
		if (pool_ != nullptr)
			(void)knit_completion_release(pool_, &c_);
		pool_ = nullptr;
		c_ = knit_completion_t();
	}

	knit::ticket ticket() const noexcept { return c_.ticket; }
	void *user_data() const noexcept { return c_.user_data; }
	std::uint32_t task() const noexcept { return c_.task; }
	// The raw status: 0 or a negative KNIT_E* code.
	std::int32_t status() const noexcept { return c_.status; }
	bool ok() const noexcept { return c_.status == 0; }
	// Why the call failed (meaningful when !ok()).
	knit::error error() const noexcept { return knit::error_of(c_.status); }
	// The result (status 0) or the task's error value (-KNIT_ETASK), as a
	// view valid until this completion is released.
	knit::value get() const noexcept { return knit::value(c_.result); }
	// -KNIT_ETASK: the task's code and message (0 and empty otherwise).
	std::int32_t task_code() const noexcept
	{
		return c_.result.type == KNIT_VALUE_ERROR ? c_.result.code : 0;
	}
	std::string_view message() const noexcept
	{
		return c_.result.type == KNIT_VALUE_ERROR ? get().str() : std::string_view();
	}
	// The result converted as value::as<T>(), or the call's error (with the
	// task's code for knit::error::task).
	template <class T> knit::result<T> as() const
	{
		if (c_.status != 0)
			return knit::result<T>(error(), task_code());
		return get().as<T>();
	}

	// What the pool knows about this completion beyond it (1.2,
	// knit_completion_info(3)): its lane and worker, its timing (pools
	// created with KNIT_POOL_INFO_TIMING), why its worker died.
	// knit::error::not_found when the pool kept none for it.
	knit::result<knit_completion_info_t> info() const noexcept
	{
		knit_completion_info_t in{};
		in.size = sizeof in;
		const int rc = knit_completion_info(pool_, &c_, &in);
		if (rc != 0)
			return knit::result<knit_completion_info_t>(knit::error_of(rc));
		return knit::result<knit_completion_info_t>(in);
	}

	const knit_completion_t &raw() const noexcept { return c_; }

private:
	knit_pool_t *pool_;
	knit_completion_t c_;
};

// The range of pool::completions(timeout): the first batch waits up to
// timeout, every later one polls, until knit_complete finds none (or fails:
// last_error()). Each element is released when the loop moves past it
// unless it was moved out. Neither copyable nor movable: use it in place.
class completion_range {
public:
	static constexpr unsigned batch = 32;

	completion_range(knit_pool_t *pool, std::chrono::nanoseconds timeout) noexcept
	    : pool_(pool), timeout_(timeout.count())
	{}
	completion_range(const completion_range &) = delete;
	completion_range &operator=(const completion_range &) = delete;
	~completion_range()
	{
		cur_.reset();
		for (; pos_ < n_; pos_++)
			(void)knit_completion_release(pool_, &raw_[pos_]);
	}

	struct sentinel {};
	class iterator {
	public:
		using value_type = knit::completion;
		using reference = knit::completion &;
		using difference_type = std::ptrdiff_t;
		using iterator_category = std::input_iterator_tag;

		explicit iterator(completion_range *r) noexcept : r_(r) {}
		knit::completion &operator*() const noexcept { return r_->cur_; }
		knit::completion *operator->() const noexcept { return &r_->cur_; }
		iterator &operator++() noexcept
		{
			r_->advance();
			return *this;
		}
		void operator++(int) noexcept { r_->advance(); }
		friend bool operator==(const iterator &i, sentinel) noexcept { return i.at_end(); }
		friend bool operator!=(const iterator &i, sentinel) noexcept { return !i.at_end(); }
		friend bool operator==(sentinel, const iterator &i) noexcept { return i.at_end(); }
		friend bool operator!=(sentinel, const iterator &i) noexcept { return !i.at_end(); }

	private:
		bool at_end() const noexcept { return r_->done_; }
		completion_range *r_;
	};

	iterator begin() noexcept
	{
		if (!started_) {
			started_ = true;
			fill(timeout_);
			advance();
		}
		return iterator(this);
	}
	sentinel end() const noexcept { return sentinel(); }

	// Completions handed out so far.
	unsigned count() const noexcept { return count_; }
	// The error that ended the range (knit::error::closed: the pool is
	// stopped and drained), or nothing when it ended for want of completions.
	std::optional<knit::error> last_error() const noexcept { return err_; }

private:
	void fill(std::int64_t timeout) noexcept
	{
		pos_ = n_ = 0;
		const int n = knit_complete(pool_, raw_, batch, timeout);
		if (n < 0)
			err_ = knit::error_of(n);
		else
			n_ = static_cast<unsigned>(n);
	}
	void advance() noexcept
	{
		cur_.reset();
		if (pos_ == n_ && !done_ && n_ != 0)
			fill(0);
		if (pos_ == n_) {
			done_ = true;
			return;
		}
		cur_ = knit::completion(pool_, raw_[pos_++]);
		count_++;
	}

	knit_pool_t *pool_;
	std::int64_t timeout_;
	knit_completion_t raw_[batch];
	unsigned pos_ = 0, n_ = 0, count_ = 0;
	bool started_ = false, done_ = false;
	std::optional<knit::error> err_;
	knit::completion cur_;
};

// ---- options ------------------------------------------------------------------------

// Zero-initialised options with size set: thread workers.
inline knit_pool_options_t thread_options(std::uint32_t workers = 1) noexcept
{
	knit_pool_options_t o{};
	o.size = sizeof o;
	o.workers = workers;
	return o;
}

// Process workers running the tasks of a task library (the path must stay
// valid until the pool is created; the pool keeps what it needs).
inline knit_pool_options_t process_options(const char *task_library,
					   std::uint32_t workers = 1) noexcept
{
	knit_pool_options_t o = thread_options(workers);
	o.worker_kind = KNIT_WORKERS_PROCESSES;
	o.task_library = task_library;
	return o;
}

inline knit_call_options_t call_options(std::uint32_t flags = 0,
					std::uint32_t timeout_ms = 0) noexcept
{
	knit_call_options_t o{};
	o.size = sizeof o;
	o.flags = flags;
	o.timeout_ms = timeout_ms;
	return o;
}

// Whether the loaded library can serve a program built with this header
// (KNIT_VERSION_COMPATIBLE; see knit_version(3)).
inline bool library_compatible() noexcept { return KNIT_VERSION_COMPATIBLE(knit_version()); }

// ---- the pool ------------------------------------------------------------------------

// A pool: the knit_pool_t and, for thread pools, the callables of its tasks.
// Destroying it destroys the pool (knit_pool_destroy: waiting calls complete
// with -KNIT_ECLOSED and the workers are joined), then the callables.
// Movable (the knit_pool_t and the callables stay where they are, so
// completions and tickets stay valid), not copyable. Its member functions
// are as thread-safe as the C functions they call; moving and destroying
// are not.
class pool {
public:
	pool() noexcept = default;
	pool(pool &&o) noexcept : p_(o.p_), fns_(o.fns_), free_fns_(o.free_fns_)
	{
		o.p_ = nullptr, o.fns_ = nullptr, o.free_fns_ = nullptr;
	}
	pool &operator=(pool &&o) noexcept
	{
		if (this != &o) {
			(void)destroy();
			p_ = o.p_, fns_ = o.fns_, free_fns_ = o.free_fns_;
			o.p_ = nullptr, o.fns_ = nullptr, o.free_fns_ = nullptr;
		}
		return *this;
	}
	pool(const pool &) = delete;
	pool &operator=(const pool &) = delete;
	~pool() { (void)destroy(); }

	// A pool of C++ tasks (thread workers), with options or with every
	// default.
	template <class... F>
	static knit::result<pool> create(const knit_pool_options_t &opts, task_def<F>... tasks)
	{
		return make(&opts, std::move(tasks)...);
	}
	template <class... F> static knit::result<pool> create(task_def<F>... tasks)
	{
		return make(nullptr, std::move(tasks)...);
	}

#if KNIT_HPP_EXCEPTIONS
	// As create(), throwing knit::exception on failure. With options alone,
	// a process pool (process_options()).
	template <class... F>
	explicit pool(const knit_pool_options_t &opts, task_def<F>... tasks)
	    : pool(create(opts, std::move(tasks)...).value())
	{}
#endif

	// knit_pool_destroy now (the callables after it); the pool is then
	// empty. Returns what knit_pool_destroy returned.
	knit::result<void> destroy() noexcept
	{
		knit::result<void> r;
		if (p_ != nullptr)
			r = detail::check(knit_pool_destroy(p_));
		if (free_fns_ != nullptr)
			free_fns_(fns_);
		p_ = nullptr, fns_ = nullptr, free_fns_ = nullptr;
		return r;
	}

	knit_pool_t *get() const noexcept { return p_; }
	explicit operator bool() const noexcept { return p_ != nullptr; }

	// A task's id from its name (ids are indexes in name order).
	knit::result<std::uint32_t> task_id(const char *name) const noexcept
	{
		const int id = knit_pool_task_id(p_, name);
		if (id < 0)
			return knit::result<std::uint32_t>(knit::error_of(id));
		return knit::result<std::uint32_t>(static_cast<std::uint32_t>(id));
	}

	// One synchronous call (knit_call). T = knit::completion (the default):
	// the completion, whatever its status; the error is only that the call
	// could not be made. Any other T: the result converted as
	// completion::as<T>() (the call's error, the task's code, or a kind
	// mismatch); T must own its bytes (not a view: the completion is gone).
	template <class T = knit::completion>
	knit::result<T> call(std::uint32_t task, const knit::value &arg = knit::value(),
			     std::chrono::nanoseconds timeout = knit::task_default) const
	{
		knit_completion_t c;
		const int rc = knit_call(p_, task, &arg.raw(), &c, timeout.count());
		return finish_call<T>(rc, c);
	}
	// With per-call options (call_options()) and, when ticket is not NULL,
	// the call's ticket stored there before the wait, for cancel() from
	// another thread (knit_call_ex).
	template <class T = knit::completion>
	knit::result<T> call(std::uint32_t task, const knit::value &arg,
			     const knit_call_options_t &opts,
			     std::chrono::nanoseconds timeout = knit::task_default,
			     knit::ticket *ticket = nullptr) const
	{
		knit_completion_t c;
		const int rc =
			knit_call_ex(p_, task, &arg.raw(), &opts, ticket, &c, timeout.count());
		return finish_call<T>(rc, c);
	}

	// Enqueue a call; its one completion comes from complete() or
	// completions(), carrying user_data.
	knit::result<knit::ticket> enqueue(std::uint32_t task,
					   const knit::value &arg = knit::value(),
					   void *user_data = nullptr) const noexcept
	{
		knit::ticket t = 0;
		const int rc = knit_enqueue(p_, task, &arg.raw(), user_data, &t);
		if (rc < 0)
			return knit::result<knit::ticket>(knit::error_of(rc));
		return knit::result<knit::ticket>(t);
	}
	knit::result<knit::ticket> enqueue(std::uint32_t task, const knit::value &arg,
					   void *user_data,
					   const knit_call_options_t &opts) const noexcept
	{
		knit::ticket t = 0;
		const int rc = knit_enqueue_ex(p_, task, &arg.raw(), user_data, &opts, &t);
		if (rc < 0)
			return knit::result<knit::ticket>(knit::error_of(rc));
		return knit::result<knit::ticket>(t);
	}

	// Reap one completion: knit::error::timed_out when none came within
	// timeout (poll: none was ready), knit::error::closed once the pool is
	// stopped and drained.
	knit::result<knit::completion> complete(std::chrono::nanoseconds timeout) const noexcept
	{
		knit_completion_t c;
		const int n = knit_complete(p_, &c, 1, timeout.count());
		if (n < 0)
			return knit::result<knit::completion>(knit::error_of(n));
		if (n == 0)
			return knit::result<knit::completion>(knit::error::timed_out);
		return knit::result<knit::completion>(knit::completion(p_, c));
	}

	// Reap the completion of one call, leaving every other queued
	// (knit_complete_tickets, 1.2): knit::error::timed_out when it did not
	// complete within timeout, knit::error::not_found when t names no call
	// of this pool still to be reaped.
	knit::result<knit::completion> complete(knit::ticket t,
						std::chrono::nanoseconds timeout) const noexcept
	{
		knit_completion_t c;
		const int n = knit_complete_tickets(p_, &t, 1, &c, 1, timeout.count());
		if (n < 0)
			return knit::result<knit::completion>(knit::error_of(n));
		if (n == 0)
			return knit::result<knit::completion>(knit::error::timed_out);
		return knit::result<knit::completion>(knit::completion(p_, c));
	}

	// Wait until every call enqueued before now has been reaped, by any
	// thread, without stopping (knit_wait_idle, 1.2): knit::error::timed_out
	// when timeout passed first.
	knit::result<void> wait_idle(std::chrono::nanoseconds timeout) const noexcept
	{
		return detail::check(knit_wait_idle(p_, timeout.count()));
	}

	// for (knit::completion &c : pool.completions(timeout)) ...
	// Waits up to timeout for the first completion, then takes every one
	// ready (see completion_range).
	completion_range completions(std::chrono::nanoseconds timeout) const noexcept
	{
		return completion_range(p_, timeout);
	}

	// knit_cancel: KNIT_CANCEL_NOW (the default), KNIT_CANCEL_SIGNAL or, for a
	// process pool, KNIT_CANCEL_KILL (knit_cancel(3)).
	knit::result<void> cancel(knit::ticket t,
				  std::uint32_t flags = KNIT_CANCEL_NOW) const noexcept
	{
		return detail::check(knit_cancel(p_, t, flags));
	}

	// The pool's pollable descriptor (owned by the pool; never read it):
	// readable while complete(knit::poll) would return something.
	knit::result<int> completion_fd() const noexcept
	{
		const int fd = knit_completion_fd(p_);
		if (fd < 0)
			return knit::result<int>(knit::error_of(fd));
		return knit::result<int>(fd);
	}

	knit::result<knit_pool_stats_t> stats() const noexcept
	{
		knit_pool_stats_t st{};
		st.size = sizeof st;
		const int rc = knit_pool_stats(p_, &st, sizeof st);
		if (rc < 0)
			return knit::result<knit_pool_stats_t>(knit::error_of(rc));
		return knit::result<knit_pool_stats_t>(st);
	}

	// knit_stop: KNIT_STOP_DRAIN or KNIT_STOP_CANCEL, waiting up to timeout
	// (no_timeout: without limit).
	knit::result<void> stop(std::uint32_t flags,
				std::chrono::nanoseconds timeout = knit::no_timeout) const noexcept
	{
		return detail::check(
			knit_stop(p_, flags, timeout == knit::no_timeout ? -1 : timeout.count()));
	}

private:
	pool(knit_pool_t *p, void *fns, void (*free_fns)(void *) noexcept) noexcept
	    : p_(p), fns_(fns), free_fns_(free_fns)
	{}

	static knit::result<pool> make(const knit_pool_options_t *opts) noexcept
	{
		knit_pool_t *p = nullptr;
		const int rc = knit_pool_create(opts, nullptr, 0, &p);
		if (rc < 0)
			return knit::result<pool>(knit::error_of(rc));
		return knit::result<pool>(pool(p, nullptr, nullptr));
	}

	template <class... F, std::size_t... I>
	static void bind(detail::task_block<F...> &b, knit_task_t *out, task_def<F> &...defs,
			 std::index_sequence<I...>) noexcept
	{
		((b.slots[I].invoke = &detail::invoke<F>, b.slots[I].fn = &std::get<I>(b.fns),
		  out[I].name = defs.name, out[I].fn = &detail::trampoline,
		  out[I].timeout_ms = defs.timeout_ms, out[I].flags = defs.flags,
		  out[I].data = &b.slots[I]),
		 ...);
	}

	template <class F0, class... F>
	static knit::result<pool> make(const knit_pool_options_t *opts, task_def<F0> t0,
				       task_def<F>... tasks)
	{
		using block = detail::task_block<F0, F...>;
		constexpr std::size_t n = 1 + sizeof...(F);
		block *b = new (std::nothrow) block(std::move(t0.fn), std::move(tasks.fn)...);
		if (b == nullptr)
			return knit::result<pool>(knit::error::out_of_memory);
		knit_task_t c_tasks[n] = {};
		bind<F0, F...>(*b, c_tasks, t0, tasks..., std::make_index_sequence<n>());
		knit_pool_t *p = nullptr;
		const int rc = knit_pool_create(opts, c_tasks, n, &p);
		if (rc < 0) {
			delete b;
			return knit::result<pool>(knit::error_of(rc));
		}
		return knit::result<pool>(pool(p, b, &detail::delete_block<block>));
	}

	template <class T> knit::result<T> finish_call(int rc, const knit_completion_t &c) const
	{
		if (rc < 0)
			return knit::result<T>(knit::error_of(rc));
		knit::completion done(p_, c);
		if constexpr (std::is_same_v<T, knit::completion>) {
			return knit::result<T>(std::move(done));
		} else {
			static_assert(
				!std::is_same_v<T, std::string_view> &&
					!std::is_same_v<T, knit::bytes> &&
					!std::is_same_v<T, knit::value>,
				"pool::call<T>: T is a view of bytes the completion frees; "
				"call<knit::completion>() "
				"keeps them, or ask for std::string / std::vector<unsigned char>");
			return done.as<T>();
		}
	}

	knit_pool_t *p_ = nullptr;
	void *fns_ = nullptr;
	void (*free_fns_)(void *) noexcept = nullptr;
};

} // namespace knit

namespace std {
template <> struct is_error_code_enum<knit::error> : true_type {};
} // namespace std

#endif // KNITTING_HPP
