! pmlab's Fortran binding: ISO_C_BINDING interfaces to pmlab/pmlab.h (a loop over regions
! protected by Lazy Persistency), and Fortran wrappers over them (type pmlab_loop_t, pmlab_input,
! pmlab_layout, pmlab_open, pmlab_run, ...). Each wrapper takes an optional `stat`: without it a
! failure prints pmlab's message and stops the program (error stop 2 for a usage error, else 3),
! as allocate does without stat=. Compile this file with your program; examples/fortran-heat does.
module pmlab
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit
  implicit none
  private

  ! Statuses (pmlab.h's enum pmlab_status).
  integer(c_int), parameter, public :: PMLAB_OK = 0, PMLAB_E_INVALID = 1, PMLAB_E_CORRUPT = 2, &
    PMLAB_E_VERSION = 3, PMLAB_E_MISMATCH = 4, PMLAB_E_BUSY = 5, PMLAB_E_IO = 6, &
    PMLAB_E_UNSUPPORTED = 7, PMLAB_E_CALLBACK = 8, PMLAB_E_INTERNAL = 9

  ! What pmlab_loop_run did (pmlab.h's pmlab_report).
  type, bind(c), public :: pmlab_report
    integer(c_int32_t) :: created = 0, resumed = 0, already_done = 0, reserved = 0
    integer(c_int64_t) :: resume_phase = 0, regions_validated = 0, regions_inconsistent = 0
    integer(c_int64_t) :: regions_unwritten = 0, regions_recomputed = 0, crash_points = 0
  end type pmlab_report

  ! A loop for the wrappers: created by the first wrapper called on it, freed by pmlab_free. It
  ! remembers each array's name and shape, so that pmlab_open can point arrays at the pool's.
  type, public :: pmlab_loop_t
    type(c_ptr) :: handle = c_null_ptr
    integer :: arrays = 0
    character(len=24) :: names(8) = ''
    integer(c_int64_t) :: shapes(2, 8) = 1
  end type pmlab_loop_t

  ! Adds an array whose pool copy starts as `values` (rank 1 or 2, contiguous). pmlab reads
  ! `values` when pmlab_open creates the pool: keep them allocated until then.
  interface pmlab_input
    module procedure pmlab_input_1, pmlab_input_2
  end interface pmlab_input

  public :: pmlab_input, pmlab_zeros, pmlab_layout, pmlab_option, pmlab_open, pmlab_array, &
    pmlab_run, pmlab_free

  public :: pmlab_loop_new, pmlab_loop_free, pmlab_loop_add_array, pmlab_loop_set_layout, &
    pmlab_loop_set_params, pmlab_loop_set_option, pmlab_loop_open, pmlab_loop_array, &
    pmlab_loop_run, pmlab_loop_regions, pmlab_error_message, pmlab_status_name, c_str, &
    pmlab_loop_add_input

  ! Strings passed to these end with c_null_char: c_str("a") does it.
  interface
    type(c_ptr) function pmlab_loop_new() bind(c, name="pmlab_loop_new")
      import :: c_ptr
    end function pmlab_loop_new
    subroutine pmlab_loop_free(loop) bind(c, name="pmlab_loop_free")
      import :: c_ptr
      type(c_ptr), value :: loop
    end subroutine pmlab_loop_free
    integer(c_int) function pmlab_loop_add_array(loop, name, count) &
        bind(c, name="pmlab_loop_add_array")
      import :: c_ptr, c_int, c_char, c_int64_t
      type(c_ptr), value :: loop
      character(kind=c_char), dimension(*) :: name
      integer(c_int64_t), value :: count
    end function pmlab_loop_add_array
    integer(c_int) function pmlab_loop_add_input(loop, name, count, initial) &
        bind(c, name="pmlab_loop_add_input")
      import :: c_ptr, c_int, c_char, c_int64_t
      type(c_ptr), value :: loop, initial
      character(kind=c_char), dimension(*) :: name
      integer(c_int64_t), value :: count
    end function pmlab_loop_add_input
    integer(c_int) function pmlab_loop_set_layout(loop, phases, outputs, first, last, chunk) &
        bind(c, name="pmlab_loop_set_layout")
      import :: c_ptr, c_int, c_char, c_int64_t
      type(c_ptr), value :: loop
      integer(c_int64_t), value :: phases, first, last, chunk
      character(kind=c_char), dimension(*) :: outputs
    end function pmlab_loop_set_layout
    integer(c_int) function pmlab_loop_set_params(loop, params, bytes) &
        bind(c, name="pmlab_loop_set_params")
      import :: c_ptr, c_int, c_size_t
      type(c_ptr), value :: loop, params
      integer(c_size_t), value :: bytes
    end function pmlab_loop_set_params
    integer(c_int) function pmlab_loop_set_option(loop, key, val) &
        bind(c, name="pmlab_loop_set_option")
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: loop
      character(kind=c_char), dimension(*) :: key, val
    end function pmlab_loop_set_option
    integer(c_int) function pmlab_loop_open(loop, path, init, user) bind(c, name="pmlab_loop_open")
      import :: c_ptr, c_int, c_char, c_funptr
      type(c_ptr), value :: loop, user
      character(kind=c_char), dimension(*) :: path
      type(c_funptr), value :: init
    end function pmlab_loop_open
    type(c_ptr) function pmlab_loop_array(loop, name) bind(c, name="pmlab_loop_array")
      import :: c_ptr, c_char
      type(c_ptr), value :: loop
      character(kind=c_char), dimension(*) :: name
    end function pmlab_loop_array
    integer(c_int) function pmlab_loop_run(loop, body, user, report) bind(c, name="pmlab_loop_run")
      import :: c_ptr, c_int, c_funptr, pmlab_report
      type(c_ptr), value :: loop, user
      type(c_funptr), value :: body
      type(pmlab_report) :: report
    end function pmlab_loop_run
    integer(c_int) function c_loop_run(loop, body, user, report) bind(c, name="pmlab_loop_run")
      import :: c_ptr, c_int, c_funptr
      type(c_ptr), value :: loop, user, report
      type(c_funptr), value :: body
    end function c_loop_run
    integer(c_int64_t) function pmlab_loop_regions(loop) bind(c, name="pmlab_loop_regions")
      import :: c_ptr, c_int64_t
      type(c_ptr), value :: loop
    end function pmlab_loop_regions
    type(c_ptr) function c_loop_error(loop) bind(c, name="pmlab_loop_error")
      import :: c_ptr
      type(c_ptr), value :: loop
    end function c_loop_error
    type(c_ptr) function c_strerror(status) bind(c, name="pmlab_strerror")
      import :: c_ptr, c_int
      integer(c_int), value :: status
    end function c_strerror
    integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
    end function c_strlen
  end interface

contains

  ! The handle of `loop`, created on first use.
  function handle_of(loop) result(h)
    type(pmlab_loop_t), intent(inout) :: loop
    type(c_ptr) :: h
    if (.not. c_associated(loop%handle)) loop%handle = pmlab_loop_new()
    h = loop%handle
  end function handle_of

  ! A wrapper's ending: `rc` into `stat` if given, else a failure stops the program.
  subroutine finish(loop, rc, what, stat)
    type(pmlab_loop_t), intent(in) :: loop
    integer(c_int), intent(in) :: rc
    character(len=*), intent(in) :: what
    integer, intent(out), optional :: stat
    if (present(stat)) then
      stat = rc
      return
    end if
    if (rc == PMLAB_OK) return
    write (error_unit, '(a)') 'pmlab: ' // what // ': ' // pmlab_status_name(rc) // ': ' // &
      pmlab_error_message(loop%handle)
    if (rc == PMLAB_E_INVALID) error stop 2
    error stop 3
  end subroutine finish

  ! A usage error found by a wrapper itself: PMLAB_E_INVALID into `stat`, else stop.
  subroutine refuse(message, stat)
    character(len=*), intent(in) :: message
    integer, intent(out), optional :: stat
    if (present(stat)) then
      stat = PMLAB_E_INVALID
      return
    end if
    write (error_unit, '(a)') 'pmlab: ' // message
    error stop 2
  end subroutine refuse

  ! Records an array's name and shape (pmlab_open points arrays at the pool's with them).
  subroutine remember(loop, name, n1, n2)
    type(pmlab_loop_t), intent(inout) :: loop
    character(len=*), intent(in) :: name
    integer(c_int64_t), intent(in) :: n1, n2
    if (loop%arrays >= size(loop%names)) return
    loop%arrays = loop%arrays + 1
    loop%names(loop%arrays) = name
    loop%shapes(:, loop%arrays) = [n1, n2]
  end subroutine remember

  subroutine pmlab_input_1(loop, name, values, stat)
    type(pmlab_loop_t), intent(inout) :: loop
    character(len=*), intent(in) :: name
    real(c_double), intent(in), target :: values(:)
    integer, intent(out), optional :: stat
    if (.not. is_contiguous(values)) then
      call refuse('input ' // name // ': the values are not contiguous', stat)
      return
    end if
    call remember(loop, name, size(values, kind=c_int64_t), 1_c_int64_t)
    call finish(loop, pmlab_loop_add_input(handle_of(loop), c_str(name), &
                size(values, kind=c_int64_t), c_loc(values)), 'input ' // name, stat)
  end subroutine pmlab_input_1

  subroutine pmlab_input_2(loop, name, values, stat)
    type(pmlab_loop_t), intent(inout) :: loop
    character(len=*), intent(in) :: name
    real(c_double), intent(in), target :: values(:, :)
    integer, intent(out), optional :: stat
    if (.not. is_contiguous(values)) then
      call refuse('input ' // name // ': the values are not contiguous', stat)
      return
    end if
    call remember(loop, name, size(values, 1, kind=c_int64_t), size(values, 2, kind=c_int64_t))
    call finish(loop, pmlab_loop_add_input(handle_of(loop), c_str(name), &
                size(values, kind=c_int64_t), c_loc(values)), 'input ' // name, stat)
  end subroutine pmlab_input_2

  ! Adds an array of `count` elements, zero-filled when the pool is created.
  subroutine pmlab_zeros(loop, name, count, stat)
    type(pmlab_loop_t), intent(inout) :: loop
    character(len=*), intent(in) :: name
    integer(c_int64_t), intent(in) :: count
    integer, intent(out), optional :: stat
    call remember(loop, name, count, 1_c_int64_t)
    call finish(loop, pmlab_loop_add_array(handle_of(loop), c_str(name), count), &
                'array ' // name, stat)
  end subroutine pmlab_zeros

  ! The layout (pmlab_loop_set_layout): `outputs` is a comma-separated list of array names.
  subroutine pmlab_layout(loop, phases, outputs, first, last, chunk, stat)
    type(pmlab_loop_t), intent(inout) :: loop
    integer(c_int64_t), intent(in) :: phases, first, last, chunk
    character(len=*), intent(in) :: outputs
    integer, intent(out), optional :: stat
    call finish(loop, pmlab_loop_set_layout(handle_of(loop), phases, c_str(outputs), first, &
                last, chunk), 'layout', stat)
  end subroutine pmlab_layout

  ! An option (pmlab_loop_set_option): name, threads, persistence, checksum, warn.
  subroutine pmlab_option(loop, key, val, stat)
    type(pmlab_loop_t), intent(inout) :: loop
    character(len=*), intent(in) :: key, val
    integer, intent(out), optional :: stat
    call finish(loop, pmlab_loop_set_option(handle_of(loop), c_str(key), c_str(val)), &
                'option ' // key, stat)
  end subroutine pmlab_option

  ! Stores `params` (compared on every open), opens or creates the pool at `path`, and points
  ! a1, a2, ... (rank-2 pointers, each optional) at the pool's arrays in the order they were
  ! added, with the shapes given to pmlab_input.
  subroutine pmlab_open(loop, path, params, a1, a2, a3, a4, stat)
    type(pmlab_loop_t), intent(inout) :: loop
    character(len=*), intent(in) :: path
    integer(c_int64_t), intent(in), target :: params(:)
    real(c_double), pointer, intent(inout), optional :: a1(:, :), a2(:, :), a3(:, :), a4(:, :)
    integer, intent(out), optional :: stat
    integer(c_int) :: rc
    rc = pmlab_loop_set_params(handle_of(loop), c_loc(params), &
                               int(8 * size(params), c_size_t))
    if (rc == PMLAB_OK) rc = pmlab_loop_open(loop%handle, c_str(path), c_null_funptr, c_null_ptr)
    if (rc == PMLAB_OK .and. present(a1)) call point(1, a1)
    if (rc == PMLAB_OK .and. present(a2)) call point(2, a2)
    if (rc == PMLAB_OK .and. present(a3)) call point(3, a3)
    if (rc == PMLAB_OK .and. present(a4)) call point(4, a4)
    call finish(loop, rc, 'open ' // trim(path), stat)
  contains
    subroutine point(i, a)
      integer, intent(in) :: i
      real(c_double), pointer, intent(inout) :: a(:, :)
      call c_f_pointer(pmlab_loop_array(loop%handle, c_str(loop%names(i))), a, loop%shapes(:, i))
    end subroutine point
  end subroutine pmlab_open

  ! The pool's array `name` as a rank-1 pointer (after pmlab_open).
  subroutine pmlab_array(loop, name, a, stat)
    type(pmlab_loop_t), intent(inout) :: loop
    character(len=*), intent(in) :: name
    real(c_double), pointer, intent(inout) :: a(:)
    integer, intent(out), optional :: stat
    type(c_ptr) :: p
    integer(c_int64_t) :: i, count
    count = 0
    do i = 1, loop%arrays
      if (loop%names(i) == name) count = product(loop%shapes(:, i))
    end do
    p = pmlab_loop_array(handle_of(loop), c_str(name))
    if (c_associated(p)) call c_f_pointer(p, a, [count])
    call finish(loop, merge(PMLAB_OK, PMLAB_E_INVALID, c_associated(p)), 'array ' // name, stat)
  end subroutine pmlab_array

  ! Runs, recovers or resumes the loop: body is c_funloc of an integer(c_int) function
  ! body(user, phase, region) bind(c) with (type(c_ptr), value) user and
  ! (integer(c_int64_t), value) phase and region, returning 0.
  subroutine pmlab_run(loop, body, report, user, stat)
    type(pmlab_loop_t), intent(inout) :: loop
    type(c_funptr), intent(in) :: body
    type(pmlab_report), intent(out), optional, target :: report
    type(c_ptr), intent(in), optional :: user
    integer, intent(out), optional :: stat
    type(c_ptr) :: u, r
    u = c_null_ptr
    r = c_null_ptr
    if (present(user)) u = user
    if (present(report)) r = c_loc(report)
    call finish(loop, c_loop_run(handle_of(loop), body, u, r), 'run', stat)
  end subroutine pmlab_run

  ! Closes the pool (a run not done stays resumable) and frees the loop.
  subroutine pmlab_free(loop)
    type(pmlab_loop_t), intent(inout) :: loop
    call pmlab_loop_free(loop%handle)
    loop%handle = c_null_ptr
    loop%arrays = 0
  end subroutine pmlab_free

  ! s without trailing blanks, ended by c_null_char.
  function c_str(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=:), allocatable :: c
    c = trim(s) // c_null_char
  end function c_str

  ! A C string as a Fortran string.
  function f_str(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function f_str

  ! The message of the loop's last failure.
  function pmlab_error_message(loop) result(s)
    type(c_ptr), intent(in) :: loop
    character(len=:), allocatable :: s
    s = f_str(c_loop_error(loop))
  end function pmlab_error_message

  ! The name of a status ("PMLAB_E_MISMATCH", ...).
  function pmlab_status_name(status) result(s)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: s
    s = f_str(c_strerror(status))
  end function pmlab_status_name

end module pmlab
